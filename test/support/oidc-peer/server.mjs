// A real OpenID Connect provider (oidc-provider) for tests, run as a child process by
// test/support/oidc-peer.ts: oidc-provider is ESM-only and cannot be loaded inside jest.
//
// Configuration comes as JSON in OIDC_PEER_CONFIG:
//   { port, shape: 'get' | 'form_post', signingKey: <private RSA JWK with kid/alg>,
//     clients: [{ clientId, clientSecret, redirectUris, appleStyleSecret? }],
//     accounts: { [sub]: { email, email_verified, name } }, requirePkce }
// Prints `ready <port>` on stdout once listening.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import * as querystring from 'node:querystring';

// oidc-provider prints notices (console.info, i.e. stdout) and warnings about development-only
// settings (Node 20, dev interactions, in-memory adapter, default TTLs, the pre-parsed token body
// we hand it). stdout carries only our `ready` line, so send all of it to stderr, which the helper
// keeps and shows only when the peer fails.
console.info = (...args) => console.error(...args);
console.warn = (...args) => console.error(...args);

// Dynamic imports, so that the console redirection is in place before oidc-provider's module body runs.
const { default: Provider } = await import('oidc-provider');
const { jwtVerify, importJWK, decodeProtectedHeader } = await import('jose');

const config = JSON.parse(process.env.OIDC_PEER_CONFIG ?? '{}');
const accounts = new Map(Object.entries(config.accounts ?? {}));
const clients = new Map(config.clients.map((c) => [c.clientId, c]));

const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(config.port ?? 0, '127.0.0.1', resolve);
});
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: config.clients.map((c) => ({
    client_id: c.clientId,
    client_secret: c.clientSecret,
    redirect_uris: c.redirectUris,
    response_types: ['code'],
    grant_types: ['authorization_code'],
    // Registered as post; oidc-provider 9 also accepts HTTP Basic for a client registered so.
    token_endpoint_auth_method: 'client_secret_post',
  })),
  jwks: { keys: [config.signingKey] },
  // Without keys, cookies are unsigned and oidc-provider warns; a fresh key per process is fine
  // since sessions live in memory and die with the process anyway.
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  // `name` is Apple's scope for the name claim, `profile` Google's.
  scopes: ['openid', 'email', 'profile', 'name'],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], name: ['name'] },
  // Real providers (Google, Apple) put the email claims in the ID token; oidc-provider only does
  // that for scope-requested claims when it does not conform to the "claims only via userinfo" rule.
  conformIdTokenClaims: false,
  // The built-in login/consent pages stand in for the provider's UI; the helper drives them.
  features: { devInteractions: { enabled: true } },
  pkce: { required: () => Boolean(config.requirePkce) },
  async findAccount(_ctx, sub) {
    return {
      accountId: sub,
      // Read at token time, so accounts changed through the admin endpoint take effect at once.
      async claims() {
        return { sub, ...(accounts.get(sub) ?? {}) };
      },
    };
  },
  // The default error page is HTML; a JSON body makes failures readable in test output.
  async renderError(ctx, out) {
    ctx.type = 'json';
    ctx.body = out;
  },
});
// Apple-like providers refuse authorization requests that ask for name/email unless the answer
// comes back as a form POST; do the same so a test notices an API that forgets response_mode.
provider.use(async (ctx, next) => {
  if (config.shape === 'form_post' && ctx.method === 'GET' && ctx.path === '/auth') {
    const scopes = String(ctx.query.scope ?? '').split(' ');
    if ((scopes.includes('email') || scopes.includes('name') || scopes.includes('profile'))
      && ctx.query.response_mode !== 'form_post') {
      ctx.status = 400;
      ctx.body = { error: 'invalid_request', error_description: 'response_mode must be form_post when name or email scope is requested' };
      return;
    }
  }
  await next();
});

// Apple-style client authentication: the client_secret is an ES256 JWT signed by the team's key.
// oidc-provider only knows static secrets, so we check the JWT here and, when it is valid, put the
// registered static secret in its place before oidc-provider's own client_secret_post/basic check
// runs. Whichever way an Apple-style client presents its secret, only a valid JWT gets through, so
// the static secret in clear is refused.
//
// oidc-provider reads the token body itself (lib/shared/selective_body.js): from the request stream
// while it is still readable, otherwise from an already-parsed `req.body`. Reading the stream here
// consumes it, so we always hand the (possibly rewritten) parameters over as `req.body`.
provider.use(async (ctx, next) => {
  if (ctx.method !== 'POST' || ctx.path !== '/token' || !ctx.is('application/x-www-form-urlencoded')) {
    return next();
  }
  const chunks = [];
  for await (const chunk of ctx.req) chunks.push(chunk);
  const params = querystring.parse(Buffer.concat(chunks).toString('utf8'));
  const basic = parseBasic(ctx.get('authorization'));

  const client = clients.get(basic?.clientId ?? params.client_id);
  const presented = basic ? basic.secret : params.client_secret;
  if (client?.appleStyleSecret && typeof presented === 'string') {
    if (!(await appleSecretValid(client, presented))) {
      ctx.status = 401;
      ctx.body = { error: 'invalid_client', error_description: 'client_secret is not a valid ES256 JWT of the team' };
      return;
    }
    if (basic) {
      ctx.req.headers.authorization = `Basic ${Buffer.from(
        `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`,
      ).toString('base64')}`;
    } else {
      params.client_secret = client.clientSecret;
    }
  }
  ctx.req.body = params;
  return next();
});

// client_secret_basic: id and secret are form-urlencoded inside the base64 (RFC 6749 section 2.3.1).
function parseBasic(header) {
  const match = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header ?? '');
  if (!match) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const unescape = (s) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, '%20'));
    } catch {
      return s;
    }
  };
  return { clientId: unescape(decoded.slice(0, colon)), secret: unescape(decoded.slice(colon + 1)) };
}

async function appleSecretValid(client, secret) {
  const { teamId, keyId, publicJwk } = client.appleStyleSecret;
  try {
    // Checked before verifying: the static secret in clear is not a JWT and must not pass either.
    if (decodeProtectedHeader(secret).kid !== keyId) return false;
    const key = await importJWK({ ...publicJwk, alg: 'ES256' }, 'ES256');
    const { payload } = await jwtVerify(secret, key, {
      algorithms: ['ES256'],
      issuer: teamId,
      subject: client.clientId,
      audience: issuer,
      requiredClaims: ['exp', 'iat'],
      clockTolerance: 5,
    });
    // jose accepts an iat in the future; Apple does not.
    return payload.iat <= Math.floor(Date.now() / 1000) + 5;
  } catch {
    return false;
  }
}

// Paths (e.g. `/token`) set by a test to fail as a provider in trouble does: `hang` accepts the
// request and never answers (the held responses are dropped when the test lifts it), a number
// answers that status with an HTML page, as a proxy in front of a broken provider would.
let failing = { paths: new Set(), how: 'hang' };
const held = new Set();

const callback = provider.callback();
server.on('request', async (req, res) => {
  // Test-only admin endpoint: make paths fail (`{paths: [], how}`; no paths restores them).
  if (req.method === 'PUT' && req.url === '/__test/failing') {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const { paths, how } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    failing = { paths: new Set(paths), how: how ?? 'hang' };
    if (!failing.paths.size) {
      for (const response of held) response.destroy();
      held.clear();
    }
    res.writeHead(204).end();
    return;
  }
  if (failing.paths.has(new URL(req.url, issuer).pathname)) {
    if (failing.how === 'hang') {
      held.add(res);
      res.once('close', () => held.delete(res));
    } else {
      res.writeHead(failing.how, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>');
    }
    return;
  }
  // Test-only admin endpoint: set the claims the provider returns for a sub.
  if (req.method === 'POST' && req.url === '/__test/accounts') {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    try {
      const { sub, account } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (typeof sub !== 'string' || !sub) throw new Error('sub must be a non-empty string');
      accounts.set(sub, account ?? {});
      res.writeHead(204).end();
    } catch (err) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(err) }));
    }
    return;
  }
  callback(req, res);
});

function shutdown() {
  server.close(() => process.exit(0));
  // Keep-alive connections would hold close() open; the peer is going away, drop them.
  server.closeAllConnections();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
// The helper holds our stdin open; when its process dies (even by SIGKILL) the pipe closes and
// we go too, so no orphan provider outlives a crashed jest worker.
process.stdin.on('end', shutdown);
process.stdin.on('error', shutdown);
process.stdin.resume();

process.stdout.write(`ready ${port}\n`);
