// Social sign-in against real OpenID providers (test/support/oidc-peer.ts): provider_a shaped like
// Google (GET redirect callback, client secret), provider_b like Apple (form_post callback, an
// ES256 client secret made from the team's key, signed notifications). The API under test is
// configured for both, and helpers drive the browser flow through HTTP redirects as a browser does.
import { createHash } from 'node:crypto';
import { exportJWK, exportPKCS8, generateKeyPair, SignJWT, importJWK } from 'jose';
import { startOidcPeer, type OidcPeer } from './oidc-peer';
import { startTestApp, type TestApp } from './test-app';
import { signedInUser } from './users';

export const API = 'https://api.example.test';
export const APP_ORIGIN = 'https://app.example.test';
export const REDIRECT_TO = `${APP_ORIGIN}/auth/done`;

/** The clients each provider knows: our web client, a native app of ours, and someone else's app. */
export const CLIENTS = {
  provider_a: { web: 'web-a', native: 'ios-a', other: 'other-a' },
  provider_b: { web: 'web-b', native: 'ios-b', other: 'other-b' },
} as const;
const NATIVE_REDIRECT = `${APP_ORIGIN}/native`;

export interface SocialPeers {
  a: OidcPeer;
  b: OidcPeer;
  /** Env for startTestApp: both providers configured, rate limits out of the way. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startSocialPeers(): Promise<SocialPeers> {
  const team = await generateKeyPair('ES256', { extractable: true });
  const publicJwk = await exportJWK(team.publicKey);
  const a = await startOidcPeer({
    shape: 'get',
    requirePkce: true,
    clients: [
      { clientId: CLIENTS.provider_a.web, clientSecret: 'web-a-secret', redirectUris: [`${API}/v1/auth/provider_a/callback`] },
      { clientId: CLIENTS.provider_a.native, clientSecret: 'ios-a-secret', redirectUris: [NATIVE_REDIRECT] },
      { clientId: CLIENTS.provider_a.other, clientSecret: 'other-a-secret', redirectUris: [NATIVE_REDIRECT] },
    ],
  });
  const b = await startOidcPeer({
    shape: 'form_post',
    clients: [
      {
        clientId: CLIENTS.provider_b.web,
        // Never sent by the API: the peer accepts only the ES256 JWT made from the team key.
        clientSecret: 'web-b-static-secret',
        redirectUris: [`${API}/v1/auth/provider_b/callback`],
        appleStyleSecret: { teamId: 'TEAM123456', keyId: 'KEY1234567', publicJwk },
      },
      { clientId: CLIENTS.provider_b.native, clientSecret: 'ios-b-secret', redirectUris: [NATIVE_REDIRECT] },
      { clientId: CLIENTS.provider_b.other, clientSecret: 'other-b-secret', redirectUris: [NATIVE_REDIRECT] },
    ],
  });
  const env = {
    PUBLIC_BASE_URL: API,
    APP_ORIGINS: APP_ORIGIN,
    BCRYPT_COST: '4',
    RATE_LIMIT_LOGIN_PER_MINUTE: '1000',
    RATE_LIMIT_REGISTER_PER_MINUTE: '1000',
    PROVIDER_A_ISSUER: a.issuer,
    PROVIDER_A_CLIENT_ID: `${CLIENTS.provider_a.web},${CLIENTS.provider_a.native}`,
    PROVIDER_A_CLIENT_SECRET: 'web-a-secret',
    PROVIDER_B_ISSUER: b.issuer,
    PROVIDER_B_CLIENT_ID: `${CLIENTS.provider_b.web},${CLIENTS.provider_b.native}`,
    PROVIDER_B_TEAM_ID: 'TEAM123456',
    PROVIDER_B_KEY_ID: 'KEY1234567',
    PROVIDER_B_PRIVATE_KEY: await exportPKCS8(team.privateKey),
    // A rotated key is picked up at once (production waits 30 s between refetches).
    PROVIDER_KEYS_REFRESH_COOLDOWN_MS: '0',
  };
  return { a, b, env, close: async () => void (await Promise.all([a.close(), b.close()])) };
}

/** Both providers and an app configured for them, for one test file (stop them with stopSocialApp). */
export async function startSocialApp(): Promise<{ peers: SocialPeers; t: TestApp }> {
  const peers = await startSocialPeers();
  return { peers, t: await startTestApp(peers.env) };
}

export async function stopSocialApp(app: { peers?: SocialPeers; t?: TestApp }): Promise<void> {
  await app.t?.close();
  await app.peers?.close();
}

let unique = 0;
/** A provider subject and an email address no other test uses. */
export const uniqueSub = (tag: string) => `${tag}-${++unique}-${Date.now()}`;
export const uniqueEmail = (tag: string) => `${tag}${++unique}-${Date.now()}@example.com`;

export type ProviderName = 'provider_a' | 'provider_b';

/**
 * The app clock follows real time (the providers' tokens carry real `iat` and `exp`), unless a
 * test moved it further on.
 */
export function syncClock(t: TestApp): void {
  if (t.clock.now.getTime() < Date.now()) t.clock.now = new Date();
}

const cookiePair = (setCookie: string[] | undefined, name: string) => setCookie?.find((c) => c.startsWith(`${name}=`))?.split(';')[0];

/** A response's Set-Cookie headers (supertest types them as one string). */
export const setCookies = (res: { headers: Record<string, any> }): string[] => res.headers['set-cookie'] ?? [];

/** The name=value pairs of a response's Set-Cookie headers that are not being cleared. */
export function liveCookies(res: { headers: Record<string, any> }): string[] {
  const all: string[] = res.headers['set-cookie'] ?? [];
  return all.filter((c) => !/Max-Age=0/.test(c)).map((c) => c.split(';')[0]!);
}

export interface BrowserFlow {
  /** The answer to GET /v1/auth/{provider}/start. */
  start: any;
  /** `__Host-social-state=…`, as the browser keeps it. */
  stateCookie: string;
  /** What the provider sent the browser back with (query or form). */
  callback: { method: 'GET' | 'POST'; path: string; form?: Record<string, string> };
  /** The API's answer to the callback. */
  res: any;
}

/** Sends the callback request the provider made the browser do, with the browser's cookies. */
export function sendCallback(t: TestApp, callback: BrowserFlow['callback'], cookie: string | null) {
  const req = callback.method === 'GET' ? t.http.get(callback.path) : t.http.post(callback.path).type('form').send(callback.form!);
  return cookie ? req.set('Cookie', cookie) : req;
}

/**
 * The whole browser flow: start (with the session cookie for `link`), the provider's sign-in as
 * `sub` (or a cancel), and the callback. `form` adds fields to provider_b's form post.
 */
export async function browserFlow(
  t: TestApp,
  peers: SocialPeers,
  provider: ProviderName,
  as: { sub: string } | { cancel: true },
  opts: { intent?: 'login' | 'link'; sessionCookie?: string; redirectTo?: string; form?: Record<string, string> } = {},
): Promise<BrowserFlow> {
  syncClock(t);
  const query = new URLSearchParams({ redirect_to: opts.redirectTo ?? REDIRECT_TO, ...(opts.intent ? { intent: opts.intent } : {}) });
  let startReq = t.http.get(`/v1/auth/${provider}/start?${query}`);
  if (opts.sessionCookie) startReq = startReq.set('Cookie', opts.sessionCookie);
  const start = await startReq.expect(302);
  const stateCookie = cookiePair(setCookies(start), '__Host-social-state')!;
  const peer = provider === 'provider_a' ? peers.a : peers.b;
  const back = await peer.authorize(start.headers.location!, as);
  const url = new URL(back.url);
  const callback = { method: back.method, path: url.pathname + url.search, form: back.method === 'POST' ? { ...back.form, ...opts.form } : undefined };
  const res = await sendCallback(t, callback, stateCookie);
  return { start, stateCookie, callback, res };
}

/** A native app's ID token: a nonce from the API, then the provider's own code flow as our native client. */
export async function nativeIdToken(t: TestApp, peers: SocialPeers, provider: ProviderName, sub: string, opts: { clientId?: string } = {}) {
  syncClock(t);
  const nonceRes = await t.http.post(`/v1/auth/${provider}/nonce`).expect(201);
  const nonce: string = nonceRes.body.nonce;
  const peer = provider === 'provider_a' ? peers.a : peers.b;
  const clientId = opts.clientId ?? CLIENTS[provider].native;
  const secret = `${clientId}-secret`;
  // provider_b is configured for hashed nonces: its SDK is given SHA-256(nonce), as Apple's is.
  const sent = provider === 'provider_b' ? createHash('sha256').update(nonce).digest('hex') : nonce;
  const idToken = await peer.issueIdToken({ clientId, clientSecret: secret, redirectUri: NATIVE_REDIRECT, nonce: sent, sub });
  return { idToken, nonce };
}

/** A notification as provider_b signs it (or as `key` does): `events` is a JSON string, as Apple sends it. */
export async function providerNotification(
  peers: SocialPeers,
  event: { type: string; sub: string },
  opts: { key?: { jwk: any; kid: string }; iat?: number; jti?: string; audience?: string } = {},
): Promise<string> {
  const signing = opts.key ?? { jwk: peers.b.signingKey, kid: peers.b.signingKey.kid };
  const key = await importJWK(signing.jwk, 'RS256');
  return new SignJWT({ events: JSON.stringify({ ...event, event_time: Date.now() }) })
    .setProtectedHeader({ alg: 'RS256', kid: signing.kid })
    .setIssuer(peers.b.issuer)
    .setAudience(opts.audience ?? CLIENTS.provider_b.web)
    .setIssuedAt(opts.iat ?? Math.floor(Date.now() / 1000))
    .setJti(opts.jti ?? `jti-${Math.random().toString(36).slice(2)}`)
    .sign(key);
}

/** Runs `fn` while an operator has sign-up turned off (PUT /ops/settings), then turns it back on. */
export async function withRegistrationClosed(t: TestApp, fn: () => Promise<void>): Promise<void> {
  const operator = await signedInUser(t.ctx, { operator: true });
  const set = async (value: boolean) => {
    const { body } = await t.http.get('/ops/settings/auth.registration_enabled').set('Authorization', operator.auth).expect(200);
    await t.http.put('/ops/settings/auth.registration_enabled').set('Authorization', operator.auth).send({ value, version: body.version, reason: 'test' }).expect(200);
  };
  await set(false);
  try {
    await fn();
  } finally {
    await set(true);
  }
}
