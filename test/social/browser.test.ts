// The browser flow against real OpenID providers: start → the provider's sign-in → callback, through
// HTTP redirects, for both provider shapes; linking through the same flow; and every way it can fail.
import { createHash } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/test-app';
import {
  APP_ORIGIN,
  browserFlow,
  CLIENTS,
  liveCookies,
  nativeIdToken,
  REDIRECT_TO,
  sendCallback,
  setCookies,
  startSocialApp,
  stopSocialApp,
  syncClock,
  uniqueEmail,
  uniqueSub,
  withRegistrationClosed,
  type SocialPeers,
} from '../support/social';
import { PASSWORD } from '../support/mfa';
import { signUp } from '../support/accounts';
import { totp } from '../support/totp';

let peers: SocialPeers;
let t: TestApp;
const sub = () => uniqueSub('sub');
const email = () => uniqueEmail('social');

beforeAll(async () => void ({ peers, t } = await startSocialApp()));
afterAll(() => stopSocialApp({ peers, t }));

const me = (cookie: string) => t.http.get('/v1/auth/me').set('Cookie', cookie);
const sessionCookieOf = (res: any) => liveCookies(res).find((c) => c.startsWith('__Host-session='));
const events = (action: string) => t.ctx.db('audit_events').where({ action }).orderBy('at', 'desc');

describe('provider_a (GET callback)', () => {
  it('sends the browser to the provider with state, nonce and PKCE, and binds the state to the browser', async () => {
    const res = await t.http.get(`/v1/auth/provider_a/start?redirect_to=${encodeURIComponent(REDIRECT_TO)}`).expect(302);
    const location = new URL(res.headers.location!);
    expect(location.origin).toBe(peers.a.issuer);
    const q = Object.fromEntries(location.searchParams);
    expect(q).toMatchObject({ client_id: CLIENTS.provider_a.web, response_type: 'code', redirect_uri: 'https://api.example.test/v1/auth/provider_a/callback', code_challenge_method: 'S256' });
    expect(q.state).toMatch(/^st_/);
    expect(q.nonce!.length).toBeGreaterThan(20);
    expect(q.code_challenge!.length).toBe(43);
    expect(q.response_mode).toBeUndefined();
    const cookie = setCookies(res).find((c) => c.startsWith('__Host-social-state='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/Secure/);
    expect(cookie).toMatch(/SameSite=None/);
    expect(cookie).toMatch(/Max-Age=600/);
    expect(res.headers['cache-control']).toMatch(/no-store/);
  });

  it('signs up a new user: account with the verified email, identity linked, session cookie, back to redirect_to', async () => {
    const s = sub();
    const address = email();
    await peers.a.setAccount(s, { email: address, email_verified: true, name: 'Ada Lovelace' });
    const flow = await browserFlow(t, peers, 'provider_a', { sub: s });
    expect(flow.callback.method).toBe('GET');
    expect(flow.res.status).toBe(302);
    expect(flow.res.headers.location).toBe(REDIRECT_TO);
    const cleared = setCookies(flow.res).find((c) => c.startsWith('__Host-social-state='))!;
    expect(cleared).toMatch(/Max-Age=0/);
    const session = sessionCookieOf(flow.res)!;
    expect(session).toBeDefined();
    const who = await me(session).expect(200);
    expect(who.body).toMatchObject({ email: address, email_verified: true, name: 'Ada Lovelace' });
    const ids = await t.http.get('/v1/auth/identities').set('Cookie', session).expect(200);
    expect(ids.body.items).toEqual([expect.objectContaining({ provider: 'provider_a', subject: s, email: address, email_verified: true, email_forwarding: true })]);
    const [registered] = await events('auth.registered').where({ actor_id: who.body.id });
    expect(registered.data).toEqual({ method: 'provider_a' });
    const [linked] = await events('social.identity.linked').where({ actor_id: who.body.id });
    expect(linked.data).toMatchObject({ provider: 'provider_a', via: 'sign_up' });
    const [login] = await events('auth.login.succeeded').where({ actor_id: who.body.id });
    expect(login.data).toMatchObject({ method: 'provider_a', transport: 'cookie' });
  });

  it('signs a known identity in again, to the same account', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    const first = await browserFlow(t, peers, 'provider_a', { sub: s });
    const second = await browserFlow(t, peers, 'provider_a', { sub: s });
    const a = await me(sessionCookieOf(first.res)!).expect(200);
    const b = await me(sessionCookieOf(second.res)!).expect(200);
    expect(b.body.id).toBe(a.body.id);
  });

  it('an unverified provider email creates an unverified account', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: false });
    const flow = await browserFlow(t, peers, 'provider_a', { sub: s });
    expect((await me(sessionCookieOf(flow.res)!).expect(200)).body.email_verified).toBe(false);
  });

  it('the user cancelling at the provider ends in a redirect with ?error=access_denied and no session', async () => {
    const flow = await browserFlow(t, peers, 'provider_a', { cancel: true });
    expect(flow.res.status).toBe(302);
    expect(flow.res.headers.location).toBe(`${REDIRECT_TO}?error=access_denied`);
    expect(sessionCookieOf(flow.res)).toBeUndefined();
  });

  it('keeps the query of redirect_to and adds the error to it', async () => {
    const flow = await browserFlow(t, peers, 'provider_a', { cancel: true }, { redirectTo: `${APP_ORIGIN}/done?from=menu` });
    expect(flow.res.headers.location).toBe(`${APP_ORIGIN}/done?from=menu&error=access_denied`);
  });
});

describe('provider_b (form_post callback, ES256 client secret)', () => {
  it('asks for form_post, and the POSTed callback signs up with the name from the `user` field', async () => {
    const s = sub();
    const address = email();
    // Like Apple: no name in the ID token; the name comes once, in the form post.
    await peers.b.setAccount(s, { email: address, email_verified: true });
    const flow = await browserFlow(t, peers, 'provider_b', { sub: s }, { form: { user: JSON.stringify({ name: { firstName: 'Grace', lastName: 'Hopper' }, email: address }) } });
    expect(new URL(flow.start.headers.location).searchParams.get('response_mode')).toBe('form_post');
    expect(flow.callback.method).toBe('POST');
    expect(flow.res.status).toBe(302);
    expect(flow.res.headers.location).toBe(REDIRECT_TO);
    const who = await me(sessionCookieOf(flow.res)!).expect(200);
    expect(who.body).toMatchObject({ email: address, email_verified: true, name: 'Grace Hopper' });
  });

  it('is exempt from the Origin check (a cross-site form post, even with a session cookie) but is bound by the state', async () => {
    // A browser already signed in here: its session cookie goes along with the provider's post.
    const other = await signUp(t, { email: email(), password: PASSWORD, transport: 'cookie' });
    const s = sub();
    await peers.b.setAccount(s, { email: email(), email_verified: true });
    const start = await t.http.get(`/v1/auth/provider_b/start?redirect_to=${encodeURIComponent(REDIRECT_TO)}`).expect(302);
    const back = await peers.b.authorize(start.headers.location!, { sub: s });
    const callback = { method: 'POST' as const, path: new URL(back.url).pathname, form: back.form };
    const cookies = `${liveCookies(start)[0]}; ${other.cookie}`;
    const res = await sendCallback(t, callback, cookies).set('Origin', 'https://provider-b.example').expect(302);
    expect(res.headers.location).toBe(REDIRECT_TO);
    expect(sessionCookieOf(res)).toBeDefined();
    // The same form again, from the same browser: the state is used up.
    const replay = await sendCallback(t, callback, cookies).set('Origin', 'https://provider-b.example').expect(400);
    expect(replay.body.code).toBe('invalid_state');
  });
});

describe('state', () => {
  it('a callback without the state cookie (another browser), with a wrong one, or replayed answers 400 invalid_state', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    const start = await t.http.get(`/v1/auth/provider_a/start?redirect_to=${encodeURIComponent(REDIRECT_TO)}`).expect(302);
    const stateCookie = setCookies(start)[0]!.split(';')[0]!;
    const back = await peers.a.authorize(start.headers.location!, { sub: s });
    const url = new URL(back.url);
    const callback = { method: 'GET' as const, path: url.pathname + url.search };
    expect((await sendCallback(t, callback, null).expect(400)).body.code).toBe('invalid_state');
    // The attempt without the binding used the state up: even the right browser cannot use it now.
    expect((await sendCallback(t, callback, stateCookie).expect(400)).body.code).toBe('invalid_state');

    const flow = await browserFlow(t, peers, 'provider_a', { sub: s });
    expect(flow.res.status).toBe(302);
    expect((await sendCallback(t, flow.callback, flow.stateCookie).expect(400)).body.code).toBe('invalid_state');

    const forged = new URL(flow.callback.path, 'https://x');
    forged.searchParams.set('state', 'st_forged');
    expect((await sendCallback(t, { method: 'GET', path: forged.pathname + forged.search }, flow.stateCookie).expect(400)).body.code).toBe('invalid_state');
    expect((await t.http.get('/v1/auth/provider_a/callback?code=x').expect(400)).body.code).toBe('invalid_state');
  });

  it('a state expires after 10 minutes', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    const start = await t.http.get(`/v1/auth/provider_a/start?redirect_to=${encodeURIComponent(REDIRECT_TO)}`).expect(302);
    const back = await peers.a.authorize(start.headers.location!, { sub: s });
    t.clock.advance(11 * 60 * 1000);
    const url = new URL(back.url);
    const res = await sendCallback(t, { method: 'GET', path: url.pathname + url.search }, setCookies(start)[0]!.split(';')[0]!).expect(400);
    expect(res.body.code).toBe('invalid_state');
  });

  it('redirect_to must be on an app origin', async () => {
    for (const target of ['https://evil.example/auth', 'javascript:alert(1)', `${APP_ORIGIN}.evil.example/x`, '/relative']) {
      const res = await t.http.get(`/v1/auth/provider_a/start?redirect_to=${encodeURIComponent(target)}`);
      expect({ target, status: res.status }).toEqual({ target, status: 422 });
      expect(res.body.errors[0].location).toBe('query.redirect_to');
    }
    const res = await t.http.get(`/v1/auth/provider_a/start?redirect_to=${encodeURIComponent('https://evil.example/auth')}`).expect(422);
    expect(res.body.code).toBe('redirect_not_allowed');
  });
});

describe('HEAD on the GETs that create or use up sign-in state', () => {
  const startUrl = `/v1/auth/provider_a/start?redirect_to=${encodeURIComponent(REDIRECT_TO)}`;
  const states = async () => Number((await t.ctx.db('social_states').count<{ n: string }[]>({ n: '*' }))[0]!.n);

  it('HEAD on the start answers 405 with Allow: GET, and creates no state', async () => {
    const before = await states();
    const res = await t.http.head(startUrl).expect(405);
    expect(res.headers.allow).toBe('GET');
    expect(setCookies(res)).toEqual([]);
    expect(await states()).toBe(before);
  });

  it('HEAD on the provider_a callback answers 405 and leaves the state for the GET the browser makes', async () => {
    syncClock(t);
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    const start = await t.http.get(startUrl).expect(302);
    const stateCookie = setCookies(start)[0]!.split(';')[0]!;
    const back = await peers.a.authorize(start.headers.location!, { sub: s });
    const url = new URL(back.url);
    const head = await t.http.head(url.pathname + url.search).set('Cookie', stateCookie).expect(405);
    expect(head.headers.allow).toBe('GET');
    const stateHash = createHash('sha256').update(url.searchParams.get('state')!).digest();
    expect(await t.ctx.db('social_states').where({ state_hash: stateHash }).select('used_at')).toEqual([{ used_at: null }]);
    const res = await sendCallback(t, { method: 'GET', path: url.pathname + url.search }, stateCookie).expect(302);
    expect(res.headers.location).toBe(REDIRECT_TO);
    expect(sessionCookieOf(res)).toBeDefined();
  });

  it('a CORS preflight from the app lists GET alone for them', async () => {
    for (const path of ['/v1/auth/provider_a/start', '/v1/auth/provider_a/callback']) {
      const res = await t.http.options(path).set('Origin', APP_ORIGIN).set('Access-Control-Request-Method', 'GET').expect(204);
      expect({ path, methods: res.headers['access-control-allow-methods'] }).toEqual({ path, methods: 'GET' });
    }
  });
});

describe('accounts that exist already', () => {
  it('links automatically when both the provider and the account have the email verified', async () => {
    const account = await signUp(t, { email: email(), password: PASSWORD, verified: true });
    const s = sub();
    await peers.a.setAccount(s, { email: account.email.toUpperCase(), email_verified: true });
    const flow = await browserFlow(t, peers, 'provider_a', { sub: s });
    expect(flow.res.headers.location).toBe(REDIRECT_TO);
    expect((await me(sessionCookieOf(flow.res)!).expect(200)).body.id).toBe(account.userId);
    const [linked] = await events('social.identity.linked').where({ actor_id: account.userId });
    expect(linked.data).toMatchObject({ via: 'email_match' });
  });

  it('refuses with account_exists when the account has not verified its email, or the provider has not', async () => {
    const unverified = await signUp(t, { email: email(), password: PASSWORD });
    const s1 = sub();
    await peers.a.setAccount(s1, { email: unverified.email, email_verified: true });
    const one = await browserFlow(t, peers, 'provider_a', { sub: s1 });
    expect(one.res.headers.location).toBe(`${REDIRECT_TO}?error=account_exists`);
    expect(sessionCookieOf(one.res)).toBeUndefined();

    const verified = await signUp(t, { email: email(), password: PASSWORD, verified: true });
    const s2 = sub();
    await peers.a.setAccount(s2, { email: verified.email, email_verified: false });
    const two = await browserFlow(t, peers, 'provider_a', { sub: s2 });
    expect(two.res.headers.location).toBe(`${REDIRECT_TO}?error=account_exists`);
    expect(await t.ctx.db('identities').whereIn('subject', [s1, s2])).toEqual([]);
  });

  it('a user with a second factor gets a challenge in the fragment, finished with the code', async () => {
    const account = await signUp(t, { email: email(), password: PASSWORD, verified: true });
    const setup = await t.http.post('/v1/auth/mfa/totp').set('Authorization', account.auth).expect(200);
    await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', account.auth).send({ code: totp(setup.body.secret, t.clock.now) }).expect(200);
    const s = sub();
    await peers.a.setAccount(s, { email: account.email, email_verified: true });
    const flow = await browserFlow(t, peers, 'provider_a', { sub: s });
    expect(sessionCookieOf(flow.res)).toBeUndefined();
    const location = new URL(flow.res.headers.location);
    expect(location.origin + location.pathname).toBe(REDIRECT_TO);
    const fragment = new URLSearchParams(location.hash.slice(1));
    expect(fragment.get('methods')).toBe('totp,recovery_code');
    t.clock.advance(30_000);
    const done = await t.http.post('/v1/auth/login/mfa').send({ challenge_token: fragment.get('challenge_token'), code: totp(setup.body.secret, t.clock.now) }).expect(200);
    expect(done.body.user.id).toBe(account.userId);
    expect(setCookies(done)[0]).toMatch(/^__Host-session=/);
  });

  it('a disabled account is refused (account_disabled)', async () => {
    const account = await signUp(t, { email: email(), password: PASSWORD, verified: true });
    const s = sub();
    await peers.a.setAccount(s, { email: account.email, email_verified: true });
    await t.ctx.db('users').where({ id: account.userId }).update({ disabled_at: t.clock.now });
    const flow = await browserFlow(t, peers, 'provider_a', { sub: s });
    expect(flow.res.headers.location).toBe(`${REDIRECT_TO}?error=account_disabled`);
  });

  it('no account and sign-up turned off: registration_closed, and no account is made', async () => {
    await withRegistrationClosed(t, async () => {
      const s = sub();
      const address = email();
      await peers.b.setAccount(s, { email: address, email_verified: true });
      const flow = await browserFlow(t, peers, 'provider_b', { sub: s });
      expect(flow.res.headers.location).toBe(`${REDIRECT_TO}?error=registration_closed`);
      expect(await t.ctx.db('users').where({ email: address })).toEqual([]);
    });
  });
});

describe('linking through the browser flow', () => {
  it('links a provider identity to the signed-in user, whatever email the provider gives', async () => {
    const user = await signUp(t, { email: email(), password: PASSWORD, transport: 'cookie' });
    const s = sub();
    await peers.b.setAccount(s, { email: 'relay-xyz@privaterelay.example', email_verified: true });
    const flow = await browserFlow(t, peers, 'provider_b', { sub: s }, { intent: 'link', sessionCookie: user.cookie });
    expect(flow.res.headers.location).toBe(REDIRECT_TO);
    // Linking signs nobody in: no new session cookie.
    expect(sessionCookieOf(flow.res)).toBeUndefined();
    const ids = await t.http.get('/v1/auth/identities').set('Cookie', user.cookie).expect(200);
    expect(ids.body.items.map((i: any) => [i.provider, i.subject])).toEqual([['provider_b', s]]);
    // Linking again with the same provider is refused at the start.
    const again = await t.http.get(`/v1/auth/provider_b/start?intent=link&redirect_to=${encodeURIComponent(REDIRECT_TO)}`).set('Cookie', user.cookie).expect(409);
    expect(again.body.code).toBe('provider_already_linked');
  });

  it('needs a session; an identity linked to someone else is identity_in_use', async () => {
    const res = await t.http.get(`/v1/auth/provider_a/start?intent=link&redirect_to=${encodeURIComponent(REDIRECT_TO)}`).expect(401);
    expect(res.body.code).toBe('unauthenticated');
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    await browserFlow(t, peers, 'provider_a', { sub: s }); // someone signs up with it
    const user = await signUp(t, { email: email(), password: PASSWORD, transport: 'cookie' });
    const flow = await browserFlow(t, peers, 'provider_a', { sub: s }, { intent: 'link', sessionCookie: user.cookie });
    expect(flow.res.headers.location).toBe(`${REDIRECT_TO}?error=identity_in_use`);
  });
});

describe('a provider in trouble (PROVIDER_TIMEOUT_MS 500)', () => {
  let slow: TestApp;
  beforeAll(async () => void (slow = await startTestApp({ ...peers.env, PROVIDER_TIMEOUT_MS: '500' })));
  afterAll(async () => {
    await Promise.all([peers.a.failPaths([]), peers.b.failPaths([])]);
    await slow?.close();
  });
  const lastFailure = async () => (await slow.ctx.db('audit_events').where({ action: 'auth.login.failed' }).orderBy('at', 'desc'))[0];

  it('a token endpoint that accepts the request and never answers: the callback redirects with ?error=provider_error', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    await peers.a.failPaths(['/token']);
    try {
      const started = Date.now();
      const flow = await browserFlow(slow, peers, 'provider_a', { sub: s });
      expect(flow.res.status).toBe(302);
      expect(flow.res.headers.location).toBe(`${REDIRECT_TO}?error=provider_error`);
      expect(sessionCookieOf(flow.res)).toBeUndefined();
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await peers.a.failPaths([]);
    }
    expect((await lastFailure()).data).toMatchObject({ reason: 'provider_error', method: 'provider_a', detail: 'unreachable' });
  });

  it('a token endpoint answering an HTML error page (a proxy in front of it) is the provider\'s error too', async () => {
    const s = sub();
    await peers.a.setAccount(s, { email: email(), email_verified: true });
    await peers.a.failPaths(['/token'], 502);
    try {
      const flow = await browserFlow(slow, peers, 'provider_a', { sub: s });
      expect(flow.res.headers.location).toBe(`${REDIRECT_TO}?error=provider_error`);
    } finally {
      await peers.a.failPaths([]);
    }
    expect((await lastFailure()).data).toMatchObject({ reason: 'provider_error', detail: 'unreachable' });
  });

  it('native sign-in while the provider\'s keys endpoint never answers: 503 provider_unavailable with Retry-After, not 401', async () => {
    // provider_b: this app has not fetched its keys yet.
    const { idToken, nonce } = await nativeIdToken(slow, peers, 'provider_b', sub());
    await peers.b.failPaths(['/jwks']);
    try {
      const res = await slow.http.post('/v1/auth/provider_b/token').send({ id_token: idToken, nonce }).expect(503);
      expect(res.body.code).toBe('provider_unavailable');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await peers.b.failPaths([]);
    }
  });
});
