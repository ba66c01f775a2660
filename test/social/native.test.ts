// Native sign-in with an ID token the real provider issued to our native client (spec 4.2), and
// every way a token or nonce can be wrong; the provider's keys are fetched, cached and refreshed.
import { exportPKCS8, generateKeyPair, importJWK, SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { startTestApp, type TestApp } from '../support/test-app';
import { browserFlow, CLIENTS, nativeIdToken, setCookies, startSocialApp,
  stopSocialApp,
  uniqueEmail,
  uniqueSub, syncClock, withRegistrationClosed, type SocialPeers } from '../support/social';
import { PASSWORD } from '../support/mfa';
import { signUp } from '../support/accounts';
import { totp } from '../support/totp';

let peers: SocialPeers;
let t: TestApp;
const sub = () => uniqueSub('native');
const email = () => uniqueEmail('native');

beforeAll(async () => void ({ peers, t } = await startSocialApp()));
afterAll(() => stopSocialApp({ peers, t }));

const signIn = (provider: 'provider_a' | 'provider_b', body: object) => t.http.post(`/v1/auth/${provider}/token`).send(body);
const failures = () => t.ctx.db('audit_events').where({ action: 'auth.login.failed' }).orderBy('at', 'desc');

describe('POST /v1/auth/provider_a/token (spec 4.2)', () => {
  it('signs up with a token the provider issued; bearer by default; the same identity signs in again', async () => {
    const s = sub();
    const address = email();
    await peers.a.setAccount(s, { email: address, email_verified: true, name: 'Native User' });
    const { idToken, nonce } = await nativeIdToken(t, peers, 'provider_a', s);
    expect(decodeJwt(idToken)).toMatchObject({ aud: CLIENTS.provider_a.native, nonce });
    const res = await signIn('provider_a', { id_token: idToken, nonce }).expect(200);
    expect(res.body.token).toEqual(expect.any(String));
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.body.user).toMatchObject({ email: address, email_verified: true, name: 'Native User' });
    const me = await t.http.get('/v1/auth/me').set('Authorization', `Bearer ${res.body.token}`).expect(200);
    expect(me.body.id).toBe(res.body.user.id);

    const again = await nativeIdToken(t, peers, 'provider_a', s);
    const second = await signIn('provider_a', { id_token: again.idToken, nonce: again.nonce, transport: 'cookie' }).expect(200);
    expect(second.body.user.id).toBe(res.body.user.id);
    expect(second.body.token).toBeUndefined();
    expect(setCookies(second)[0]).toMatch(/^__Host-session=.*HttpOnly/);
  });

  it('a nonce is single use: the replay of a good token and nonce is 401 invalid_token', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    const { idToken, nonce } = await nativeIdToken(t, peers, 'provider_a', s);
    await signIn('provider_a', { id_token: idToken, nonce }).expect(200);
    const replay = await signIn('provider_a', { id_token: idToken, nonce }).expect(401);
    expect(replay.body.code).toBe('invalid_token');
    const [failed] = await failures();
    expect(failed.data).toMatchObject({ reason: 'invalid_token', method: 'provider_a', detail: 'nonce_unknown' });
  });

  it('a nonce other than the one in the token, an unknown one, or one of the other provider is refused', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    const { idToken } = await nativeIdToken(t, peers, 'provider_a', s);
    const other = (await t.http.post('/v1/auth/provider_a/nonce').expect(201)).body.nonce;
    expect((await signIn('provider_a', { id_token: idToken, nonce: other }).expect(401)).body.code).toBe('invalid_token');
    expect((await failures())[0].data.detail).toBe('nonce');
    expect((await signIn('provider_a', { id_token: idToken, nonce: 'n0nce_never-issued' }).expect(401)).body.code).toBe('invalid_token');
    const ofB = (await t.http.post('/v1/auth/provider_b/nonce').expect(201)).body.nonce;
    expect((await signIn('provider_a', { id_token: idToken, nonce: ofB }).expect(401)).body.code).toBe('invalid_token');
  });

  it('a nonce lives 10 minutes', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    const { idToken, nonce } = await nativeIdToken(t, peers, 'provider_a', s);
    t.clock.advance(10 * 60 * 1000 + 1000);
    expect((await signIn('provider_a', { id_token: idToken, nonce }).expect(401)).body.code).toBe('invalid_token');
  });

  it('a token for another client of the provider (wrong audience) is refused', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    const { idToken, nonce } = await nativeIdToken(t, peers, 'provider_a', s, { clientId: CLIENTS.provider_a.other });
    expect(decodeJwt(idToken).aud).toBe(CLIENTS.provider_a.other);
    expect((await signIn('provider_a', { id_token: idToken, nonce }).expect(401)).body.code).toBe('invalid_token');
    expect((await failures())[0].data.detail).toBe('claim_aud');
  });

  it('an expired token is refused (exp past the clock skew)', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    // The nonce is fresh at the later time; the token is not.
    const { idToken } = await nativeIdToken(t, peers, 'provider_a', s);
    const exp = decodeJwt(idToken).exp! * 1000;
    t.clock.now = new Date(exp + 61_000);
    try {
      const nonce = (await t.http.post('/v1/auth/provider_a/nonce').expect(201)).body.nonce;
      const res = await signIn('provider_a', { id_token: idToken, nonce }).expect(401);
      expect(res.body.code).toBe('invalid_token');
      // The token's nonce claim is an older nonce, but expiry is checked (and reported) first.
      expect((await failures())[0].data.detail).toBe('expired');
    } finally {
      t.clock.now = new Date();
    }
  });

  it('a token signed by a key the provider never published, or altered, is refused', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    const { idToken, nonce } = await nativeIdToken(t, peers, 'provider_a', s);
    const rogue = await generateKeyPair('RS256');
    const forged = await new SignJWT(decodeJwt(idToken) as any).setProtectedHeader({ alg: 'RS256', kid: 'rogue-key' }).sign(rogue.privateKey);
    expect((await signIn('provider_a', { id_token: forged, nonce }).expect(401)).body.code).toBe('invalid_token');
    expect((await failures())[0].data.detail).toBe('unknown_key');

    // The provider's own kid, but not its key.
    const { kid } = decodeProtectedHeader(idToken);
    const second = await nativeIdToken(t, peers, 'provider_a', s);
    const impostor = await new SignJWT(decodeJwt(second.idToken) as any).setProtectedHeader({ alg: 'RS256', kid }).sign(rogue.privateKey);
    expect((await signIn('provider_a', { id_token: impostor, nonce: second.nonce }).expect(401)).body.code).toBe('invalid_token');
    expect((await failures())[0].data.detail).toBe('signature');

    // `alg: none` and a token of another issuer signed with the real key.
    const third = await nativeIdToken(t, peers, 'provider_a', s);
    const [h, p] = third.idToken.split('.');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${p}.`;
    expect((await signIn('provider_a', { id_token: none, nonce: third.nonce }).expect(401)).body.code).toBe('invalid_token');
    expect(h).toBeDefined();
    const fourth = await nativeIdToken(t, peers, 'provider_a', s);
    const realKey = await importJWK(peers.a.signingKey, 'RS256');
    const otherIssuer = await new SignJWT({ ...(decodeJwt(fourth.idToken) as any), iss: 'https://evil.example' }).setProtectedHeader({ alg: 'RS256', kid }).sign(realKey);
    expect((await signIn('provider_a', { id_token: otherIssuer, nonce: fourth.nonce }).expect(401)).body.code).toBe('invalid_token');
    expect((await failures())[0].data.detail).toBe('claim_iss');
  });

  it('a token issued in the future (iat past the skew) or without an email is refused', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    const { idToken, nonce } = await nativeIdToken(t, peers, 'provider_a', s);
    const key = await importJWK(peers.a.signingKey, 'RS256');
    const { kid } = decodeProtectedHeader(idToken);
    const claims = decodeJwt(idToken) as any;
    const future = await new SignJWT({ ...claims, iat: claims.iat + 3600, exp: claims.exp + 3600 }).setProtectedHeader({ alg: 'RS256', kid }).sign(key);
    expect((await signIn('provider_a', { id_token: future, nonce }).expect(401)).body.code).toBe('invalid_token');
    expect((await failures())[0].data.detail).toBe('claim_iat');

    const noEmailSub = sub();
    const other = await nativeIdToken(t, peers, 'provider_a', noEmailSub); // an account the provider knows nothing about: no email claim
    expect((await signIn('provider_a', { id_token: other.idToken, nonce: other.nonce }).expect(401)).body.code).toBe('invalid_token');
    expect((await failures())[0].data.detail).toBe('no_email');
  });

  it('picks up the provider\'s new signing key when a token names a kid it has not seen (key rotation)', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    const before = await nativeIdToken(t, peers, 'provider_a', s);
    await signIn('provider_a', { id_token: before.idToken, nonce: before.nonce }).expect(200);
    const oldKid = decodeProtectedHeader(before.idToken).kid;
    await peers.a.rotateKeys();
    const after = await nativeIdToken(t, peers, 'provider_a', s);
    expect(decodeProtectedHeader(after.idToken).kid).not.toBe(oldKid);
    await signIn('provider_a', { id_token: after.idToken, nonce: after.nonce }).expect(200);
  });

  it('validates the body as spec 4.2 says: id_token ≤ 16384, nonce ≤ 256, transport cookie|bearer', async () => {
    const cases: [object, string][] = [
      [{ id_token: 'x'.repeat(16385), nonce: 'n' }, 'body.id_token'],
      [{ id_token: 'x', nonce: 'n'.repeat(257) }, 'body.nonce'],
      [{ id_token: 'x', nonce: 'n', transport: 'carrier-pigeon' }, 'body.transport'],
      [{ nonce: 'n' }, 'body.id_token'],
      [{ id_token: 'x' }, 'body.nonce'],
      [{ id_token: 'x', nonce: 'n', extra: 1 }, 'body.extra'],
    ];
    for (const [body, location] of cases) {
      const res = await signIn('provider_a', body).expect(422);
      expect(res.body.errors.map((e: any) => e.location)).toContain(location);
    }
    // At the limits: accepted by the contract, refused as a token.
    expect((await signIn('provider_a', { id_token: 'x'.repeat(16384), nonce: 'n'.repeat(256) }).expect(401)).body.code).toBe('invalid_token');
  });
});

describe('accounts: second factor, disabled, existing email, closed sign-up', () => {
  it('a user with a second factor gets 202 like login, and the session made by the code remembers the identity', async () => {
    const account = await signUp(t, { email: email(), password: PASSWORD, verified: true });
    const setup = await t.http.post('/v1/auth/mfa/totp').set('Authorization', account.auth).expect(200);
    await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', account.auth).send({ code: totp(setup.body.secret, t.clock.now) }).expect(200);
    const s = sub();
    await peers.a.setAccount(s, { email: account.email, email_verified: true });
    const { idToken, nonce } = await nativeIdToken(t, peers, 'provider_a', s);
    const res = await signIn('provider_a', { id_token: idToken, nonce }).expect(202);
    expect(res.body).toMatchObject({ mfa_required: true, methods: ['totp', 'recovery_code'] });
    t.clock.advance(30_000);
    const done = await t.http.post('/v1/auth/login/mfa').send({ challenge_token: res.body.challenge_token, code: totp(setup.body.secret, t.clock.now) }).expect(200);
    expect(done.body.token).toEqual(expect.any(String)); // the native sign-in asked for bearer (the default)
    const [identity] = await t.ctx.db('identities').where({ subject: s });
    const [session] = await t.ctx.db('sessions').where({ id: done.body.session.id });
    expect(session.identity_id).toBe(identity.id);
  });

  it('a disabled account: 403 account_disabled (password sign-in too)', async () => {
    const account = await signUp(t, { email: email(), password: PASSWORD, verified: true });
    const s = sub();
    await peers.a.setAccount(s, { email: account.email, email_verified: true });
    await t.ctx.db('users').where({ id: account.userId }).update({ disabled_at: t.clock.now });
    const { idToken, nonce } = await nativeIdToken(t, peers, 'provider_a', s);
    expect((await signIn('provider_a', { id_token: idToken, nonce }).expect(403)).body.code).toBe('account_disabled');
    expect((await t.http.post('/v1/auth/login').send({ email: account.email, password: PASSWORD }).expect(403)).body.code).toBe('account_disabled');
  });

  it('an existing account whose email is not verified: 409 account_exists, nothing linked', async () => {
    const account = await signUp(t, { email: email(), password: PASSWORD });
    const s = sub();
    await peers.a.setAccount(s, { email: account.email, email_verified: true });
    const { idToken, nonce } = await nativeIdToken(t, peers, 'provider_a', s);
    expect((await signIn('provider_a', { id_token: idToken, nonce }).expect(409)).body.code).toBe('account_exists');
    expect(await t.ctx.db('identities').where({ subject: s })).toEqual([]);
  });

  it('no account while sign-up is off: 403 registration_closed', async () => {
    await withRegistrationClosed(t, async () => {
      const s = sub();
      await peers.b.setAccount(s, { email: email(), email_verified: true });
      const { idToken, nonce } = await nativeIdToken(t, peers, 'provider_b', s);
      expect((await signIn('provider_b', { id_token: idToken, nonce }).expect(403)).body.code).toBe('registration_closed');
    });
  });
});

describe('POST /v1/auth/provider_b/token', () => {
  it('checks the SHA-256 of the nonce (as the provider\'s SDK is given it) and names a new account from `user.name`', async () => {
    const s = sub();
    const address = email();
    await peers.b.setAccount(s, { email: address, email_verified: true });
    const { idToken, nonce } = await nativeIdToken(t, peers, 'provider_b', s);
    expect(decodeJwt(idToken).nonce).not.toBe(nonce);
    const res = await signIn('provider_b', { id_token: idToken, nonce, user: { name: 'Katherine Johnson' } }).expect(200);
    expect(res.body.user).toMatchObject({ email: address, name: 'Katherine Johnson' });
  });

  it('a token whose nonce claim is the raw nonce (not its hash) is refused', async () => {
    const s = sub();
    await peers.b.setAccount(s, { email: email(), email_verified: true });
    syncClock(t);
    const nonce = (await t.http.post('/v1/auth/provider_b/nonce').expect(201)).body.nonce;
    const idToken = await peers.b.issueIdToken({ clientId: CLIENTS.provider_b.native, clientSecret: 'ios-b-secret', redirectUri: 'https://app.example.test/native', nonce, sub: s });
    expect((await signIn('provider_b', { id_token: idToken, nonce }).expect(401)).body.code).toBe('invalid_token');
  });
});

describe('configuration', () => {
  it('an unconfigured provider answers 404 provider_not_configured without Retry-After; an unreachable one 503 provider_unavailable, promptly', async () => {
    const env = { ...peers.env } as Record<string, string>;
    for (const name of Object.keys(env)) if (name.startsWith('PROVIDER_A_')) delete env[name];
    // provider_b points at a port nothing listens on.
    env.PROVIDER_B_ISSUER = 'http://127.0.0.1:9';
    env.PROVIDER_TIMEOUT_MS = '1000';
    const other = await startTestApp(env);
    try {
      for (const [method, path, body] of [
        ['post', '/v1/auth/provider_a/nonce', undefined],
        ['post', '/v1/auth/provider_a/token', { id_token: 'x', nonce: 'n' }],
        ['get', '/v1/auth/provider_a/start?redirect_to=https%3A%2F%2Fapp.example.test%2Fdone', undefined],
      ] as const) {
        const req = (other.http as any)[method](path);
        const res = await (body ? req.send(body) : req).expect(404);
        expect({ path, code: res.body.code, retryAfter: res.headers['retry-after'] }).toEqual({ path, code: 'provider_not_configured', retryAfter: undefined });
      }
      const started = Date.now();
      const res = await other.http.get('/v1/auth/provider_b/start?redirect_to=https%3A%2F%2Fapp.example.test%2Fdone').expect(503);
      expect(res.body.code).toBe('provider_unavailable');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await other.close();
    }
  });

  it('a wrong team key makes provider_b refuse our client secret: the callback reports provider_error, never a 500', async () => {
    const wrong = await generateKeyPair('ES256', { extractable: true });
    const other = await startTestApp({ ...peers.env, PROVIDER_B_PRIVATE_KEY: await exportPKCS8(wrong.privateKey) });
    try {
      const s = sub();
      await peers.b.setAccount(s, { email: email(), email_verified: true });
      const flow = await browserFlow(other, peers, 'provider_b', { sub: s });
      expect(flow.res.status).toBe(302);
      expect(flow.res.headers.location).toMatch(/\?error=provider_error$/);
      const [failed] = await other.ctx.db('audit_events').where({ action: 'auth.login.failed' }).orderBy('at', 'desc');
      expect(failed.data).toMatchObject({ reason: 'provider_error', detail: 'client_refused' });
    } finally {
      await other.close();
    }
  });
});
