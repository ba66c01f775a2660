// A real OpenID Connect provider for social sign-in tests: oidc-provider in a child process
// (test/support/oidc-peer/server.mjs; oidc-provider is ESM-only and cannot be loaded inside jest),
// plus a scripted "browser" and "native app SDK" that drive it the way a user or an app would.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';

export type JsonWebKey = JWK;

export interface PeerClient {
  clientId: string;
  /** Static secret registered at the provider (client_secret_post or client_secret_basic). */
  clientSecret: string;
  redirectUris: string[];
  /**
   * Apple-style: the client authenticates with client_secret = an ES256 JWT signed by the team's key
   * (header kid = keyId; iss = teamId, sub = clientId, aud = the issuer, exp in the future, iat not).
   * For such a client the static secret in clear is refused.
   */
  appleStyleSecret?: { teamId: string; keyId: string; publicJwk: JsonWebKey };
}
export interface PeerAccount { email?: string; email_verified?: boolean; name?: string }
export interface StartOptions {
  /** 'form_post': Apple-like; authorization requests asking for email/name/profile must use response_mode=form_post. */
  shape: 'get' | 'form_post';
  clients: PeerClient[];
  /** Listen on this port (default: a random one). */
  port?: number;
  /** Refuse authorization requests without PKCE (default false: PKCE is verified when sent, like Google and Apple). */
  requirePkce?: boolean;
}
export interface CallbackRequest {
  method: 'GET' | 'POST';
  /** Full URL, including the query for GET. */
  url: string;
  /** The auto-submitted form fields, for form_post. */
  form?: Record<string, string>;
}
export interface OidcPeer {
  /** e.g. http://127.0.0.1:54321 (discovery at /.well-known/openid-configuration). */
  issuer: string;
  port: number;
  /** The provider's current ID-token signing key (private JWK incl. kid and alg) — tests sign "provider notifications" with it. */
  readonly signingKey: JsonWebKey & { kid: string; alg: string };
  /** Claims the provider returns for `sub` from now on (unknown subs log in with no email/name claims). */
  setAccount(sub: string, account: PeerAccount): Promise<void>;
  /**
   * Acts as the user's browser: GET the authorization URL our API produced, log in as `sub` and
   * consent (or cancel at the sign-in page), and return the request the browser would then make to
   * the redirect_uri (GET with query for a redirect; POST with the form fields for form_post).
   * Each call is a fresh browser (its own cookie jar), so the user always signs in.
   * Throws when the provider answers with an error page instead of going back to the client.
   */
  authorize(authorizationUrl: string, as: { sub: string } | { cancel: true }): Promise<CallbackRequest>;
  /**
   * Acts as a native app SDK: runs the authorization-code flow itself (its own state + PKCE) as
   * `clientId` with `nonce` in the authorization request, exchanges the code and returns the ID
   * token. For an Apple-style client, clientSecret must be the ES256 JWT (see appleStyleClientSecret).
   */
  issueIdToken(opts: { clientId: string; clientSecret: string; redirectUri: string; nonce: string; sub: string }): Promise<string>;
  /**
   * Makes requests to these paths (e.g. `/token`) fail as a provider in trouble does: `hang`
   * accepts them and never answers; a status answers it with an HTML page. `[]` restores them.
   */
  failPaths(paths: string[], how?: 'hang' | number): Promise<void>;
  /** Restarts the provider on the same port with a new signing key (new kid); accounts survive. */
  rotateKeys(): Promise<void>;
  close(): Promise<void>;
}

const SERVER = path.join(__dirname, 'oidc-peer', 'server.mjs');

// Children still running, killed if the test process exits without close() (the child also exits
// by itself when its stdin pipe from us closes, which covers a killed jest worker).
const live = new Set<ChildProcessWithoutNullStreams>();
let exitHookInstalled = false;
function killAllOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

async function newSigningKey(): Promise<JsonWebKey & { kid: string; alg: string }> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

interface Running {
  child: ChildProcessWithoutNullStreams;
  port: number;
  stderr: () => string;
  exited: Promise<void>;
}

function spawnPeer(config: object): Promise<Running> {
  killAllOnExit();
  const child = spawn(process.execPath, [SERVER], {
    env: { ...process.env, OIDC_PEER_CONFIG: JSON.stringify(config) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  live.add(child);
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-20_000);
  });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      live.delete(child);
      resolve();
    });
  });
  return new Promise<Running>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error('did not print "ready" within 10 s')), 10_000);
    function fail(err: Error): void {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`oidc peer: ${err.message}\n--- peer stderr ---\n${stderr}`));
    }
    const exitedEarly = (code: number | null, signal: string | null): void =>
      fail(new Error(`exited (code ${code}, signal ${signal}) before it was ready`));
    child.once('error', fail);
    child.once('exit', exitedEarly);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      const match = /^ready (\d+)$/m.exec(out);
      if (!match) return;
      clearTimeout(timer);
      child.removeListener('exit', exitedEarly);
      child.removeListener('error', fail);
      child.on('error', () => undefined); // e.g. a kill after it died: stop() copes via exitCode
      // A forgotten close() must not keep jest from exiting; the exit hook and stdin EOF clean up.
      child.unref();
      for (const stream of [child.stdin, child.stdout, child.stderr]) {
        (stream as unknown as { unref?: () => void }).unref?.();
      }
      resolve({ child, port: Number(match[1]), stderr: () => stderr, exited });
    });
  });
}

async function stop(running: Running): Promise<void> {
  if (running.child.exitCode !== null || running.child.signalCode !== null) return;
  running.child.kill('SIGTERM');
  const timer = setTimeout(() => running.child.kill('SIGKILL'), 3_000);
  await running.exited;
  clearTimeout(timer);
}

interface HttpResponse { status: number; headers: http.IncomingHttpHeaders; body: string }

/** One request, no connection reuse (the peer is restarted under the same port by rotateKeys). */
function request(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? 'GET', headers: init.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A browser's cookies for the one provider host; paths are ignored since cookie names are unique. */
class CookieJar {
  private readonly cookies = new Map<string, string>();

  store(setCookie: string[] | undefined): void {
    for (const line of setCookie ?? []) {
      const [pair = '', ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attributes.some((a) => {
        const [k = '', v = ''] = a.trim().split('=');
        if (k.toLowerCase() === 'max-age') return Number(v) <= 0;
        if (k.toLowerCase() === 'expires') return Date.parse(v) <= Date.now();
        return false;
      });
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

function htmlDecode(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|#39);/g, (_m, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e] ?? '');
}

/** oidc-provider's form_post page: `<form method="post" action="...">` with hidden inputs. */
function parseFormPost(html: string): CallbackRequest | null {
  if (!html.includes('<title>Submitting Callback</title>')) return null;
  const action = /<form method="post" action="([^"]*)">/.exec(html);
  if (!action) return null;
  const form: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"\/>/g)) {
    form[htmlDecode(m[1]!)] = htmlDecode(m[2]!);
  }
  return { method: 'POST', url: htmlDecode(action[1]!), form };
}

function base64url(bytes: Buffer): string {
  return bytes.toString('base64url');
}

/** Parameters of a callback request, whichever way (query or form) they came back. */
export function callbackParams(callback: CallbackRequest): Record<string, string> {
  if (callback.method === 'POST') return { ...(callback.form ?? {}) };
  return Object.fromEntries(new URL(callback.url).searchParams);
}

/** The ES256 client_secret JWT an Apple-style client sends (iss team, sub client, aud issuer). */
export async function appleStyleClientSecret(opts: {
  teamId: string; keyId: string; privateJwk: JsonWebKey; clientId: string; audience: string; expiresInSeconds?: number;
}): Promise<string> {
  const key = await importJWK(opts.privateJwk, 'ES256');
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: opts.keyId })
    .setIssuer(opts.teamId)
    .setSubject(opts.clientId)
    .setAudience(opts.audience)
    .setIssuedAt()
    .setExpirationTime(`${opts.expiresInSeconds ?? 300}s`)
    .sign(key);
}

class Peer implements OidcPeer {
  readonly issuer: string;
  readonly port: number;
  private readonly accounts: Record<string, PeerAccount> = {};

  constructor(
    private readonly options: StartOptions,
    private running: Running,
    private key: JsonWebKey & { kid: string; alg: string },
  ) {
    this.port = running.port;
    this.issuer = `http://127.0.0.1:${running.port}`;
  }

  get signingKey(): JsonWebKey & { kid: string; alg: string } {
    return { ...this.key };
  }

  async setAccount(sub: string, account: PeerAccount): Promise<void> {
    const res = await request(`${this.issuer}/__test/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sub, account }),
    });
    if (res.status !== 204) throw new Error(`oidc peer: setAccount answered ${res.status} ${res.body}`);
    this.accounts[sub] = { ...account };
  }

  async failPaths(paths: string[], how: 'hang' | number = 'hang'): Promise<void> {
    const res = await request(`${this.issuer}/__test/failing`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ paths, how }),
    });
    if (res.status !== 204) throw new Error(`oidc peer: failPaths answered ${res.status} ${res.body}`);
  }

  async authorize(authorizationUrl: string, as: { sub: string } | { cancel: true }): Promise<CallbackRequest> {
    let url = new URL(authorizationUrl);
    if (url.origin !== this.issuer) throw new Error(`oidc peer: ${authorizationUrl} is not at ${this.issuer}`);
    const jar = new CookieJar();
    let res = await this.browse(jar, url);
    for (let step = 0; step < 20; step += 1) {
      if (res.status >= 300 && res.status < 400 && res.headers.location) {
        const next = new URL(res.headers.location, url);
        // Leaving the provider: this is the redirect to the client's redirect_uri.
        if (next.origin !== this.issuer) return { method: 'GET', url: next.href };
        url = next;
        res = await this.browse(jar, url);
        continue;
      }
      // form_post answers (errors included, which come with status 400) leave the provider too.
      const formPost = String(res.headers['content-type']).startsWith('text/html') ? parseFormPost(res.body) : null;
      if (formPost) return formPost;

      const interaction = /^\/interaction\/([^/]+)$/.exec(url.pathname);
      if (res.status === 200 && interaction) {
        if ('cancel' in as) {
          url = new URL(`/interaction/${interaction[1]}/abort`, this.issuer);
          res = await this.browse(jar, url);
          continue;
        }
        const prompt = /<input type="hidden" name="prompt" value="([a-z]+)"\/>/.exec(res.body)?.[1];
        const form: Record<string, string> = prompt === 'login'
          ? { prompt: 'login', login: as.sub, password: 'any' }
          : { prompt: prompt ?? 'consent' };
        res = await this.browse(jar, url, new URLSearchParams(form).toString());
        continue;
      }
      throw new Error(`oidc peer: the provider answered ${res.status} at ${url.pathname}: ${res.body.slice(0, 500)}${this.stderrTail()}`);
    }
    throw new Error('oidc peer: too many steps in the authorization flow');
  }

  async issueIdToken(opts: { clientId: string; clientSecret: string; redirectUri: string; nonce: string; sub: string }): Promise<string> {
    const state = base64url(randomBytes(16));
    const verifier = base64url(randomBytes(32));
    const url = new URL('/auth', this.issuer);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: opts.clientId,
      redirect_uri: opts.redirectUri,
      scope: 'openid email profile',
      state,
      nonce: opts.nonce,
      code_challenge: base64url(createHash('sha256').update(verifier).digest()),
      code_challenge_method: 'S256',
      ...(this.options.shape === 'form_post' ? { response_mode: 'form_post' } : {}),
    }).toString();
    const params = callbackParams(await this.authorize(url.href, { sub: opts.sub }));
    if (params.error || !params.code) throw new Error(`oidc peer: authorization failed: ${JSON.stringify(params)}`);
    if (params.state !== state) throw new Error('oidc peer: state mismatch');

    const res = await request(`${this.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: params.code,
        redirect_uri: opts.redirectUri,
        code_verifier: verifier,
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
      }).toString(),
    });
    const body = JSON.parse(res.body) as { id_token?: string };
    if (res.status !== 200 || !body.id_token) throw new Error(`oidc peer: token endpoint answered ${res.status} ${res.body}`);
    return body.id_token;
  }

  async rotateKeys(): Promise<void> {
    const key = await newSigningKey();
    await stop(this.running);
    // The port was just freed; retry briefly in case it is still settling.
    let lastError: unknown;
    for (let attempt = 0; attempt < 5; attempt += 1) {
      try {
        this.running = await spawnPeer(this.config(key, this.port));
        this.key = key;
        return;
      } catch (err) {
        lastError = err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    throw lastError;
  }

  async close(): Promise<void> {
    await stop(this.running);
  }

  config(key: JsonWebKey, port: number | undefined): object {
    return {
      port: port ?? 0,
      shape: this.options.shape,
      requirePkce: this.options.requirePkce ?? false,
      signingKey: key,
      clients: this.options.clients,
      accounts: this.accounts,
    };
  }

  private async browse(jar: CookieJar, url: URL, form?: string): Promise<HttpResponse> {
    const headers: Record<string, string> = { accept: 'text/html' };
    const cookie = jar.header();
    if (cookie) headers.cookie = cookie;
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await request(url.href, { method: form === undefined ? 'GET' : 'POST', headers, body: form });
    const setCookie = res.headers['set-cookie'];
    jar.store(Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : undefined);
    return res;
  }

  private stderrTail(): string {
    const tail = this.running.stderr().trim().split('\n').slice(-20).join('\n');
    return tail ? `\n--- peer stderr (tail) ---\n${tail}` : '';
  }
}

export async function startOidcPeer(options: StartOptions): Promise<OidcPeer> {
  const key = await newSigningKey();
  const config = {
    port: options.port ?? 0,
    shape: options.shape,
    requirePkce: options.requirePkce ?? false,
    signingKey: key,
    clients: options.clients,
    accounts: {},
  };
  const running = await spawnPeer(config);
  return new Peer(options, running, key);
}
