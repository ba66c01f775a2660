// The passkey flow in a real browser: Debian's headless Chromium with a CDP virtual authenticator
// (CTAP2, resident keys, user verification) on a test page served from the application's own
// origin. The page's script registers an account, adds a passkey with navigator.credentials.create(),
// signs out, and signs in again with navigator.credentials.get() — every answer is handed back to
// jest, checked against openapi.yaml and asserted here, then the database and audit trail are
// checked. A second part: sign-ins from other origins and a replayed ceremony token are refused.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Response } from 'supertest';
import { startTestApp, type TestApp } from '../support/test-app';
import { freePort } from '../support/ports';
import { assertMatchesContract } from '../support/contract-validator';
import { addVirtualAuthenticator, launchChromium, PAGE_PATH, serveWithPage, type PageServer, type VirtualAuthenticator, type VirtualCredential } from '../support/browser';

const TIMEOUT = 60_000;
const PASSWORD = 'correct horse battery staple';
let seq = 0;
const uniqueEmail = (tag: string) => `${tag}${++seq}-${Date.now()}@example.com`;

// ---- the test page: plain browser JavaScript (the project's TypeScript has no DOM types) ----

const PAGE_SCRIPT = String.raw`
'use strict';
const PASSWORD = ${JSON.stringify(PASSWORD)};

/** One API call from the page (same origin, so the session cookie goes along), as jest needs it. */
async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let json;
  try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
  return { method, path, status: res.status, headers: Object.fromEntries(res.headers), text, body: json };
}

const failure = (e) => ({ error: (e && e.name ? e.name + ': ' : '') + (e && e.message ? e.message : String(e)) });

/** navigator.credentials.create() with the server's creation options, answered as JSON. */
async function createPasskey(options) {
  try {
    const cred = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) });
    return { credential: cred.toJSON() };
  } catch (e) {
    return failure(e);
  }
}

/** navigator.credentials.get() with the server's request options, answered as JSON. */
async function getAssertion(options) {
  try {
    const cred = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) });
    return { credential: cred.toJSON() };
  } catch (e) {
    return failure(e);
  }
}

/** Steps 1-2: a new account (cookie session), then a passkey added to it. Stops at the first failure. */
async function registerWithPasskey(email, name) {
  const steps = {};
  steps.register = await api('POST', '/v1/auth/register', { email, password: PASSWORD, transport: 'cookie' });
  if (steps.register.status !== 201) return steps;
  steps.startRegistration = await api('POST', '/v1/auth/passkeys/registration', { name });
  if (steps.startRegistration.status !== 200) return steps;
  steps.create = await createPasskey(steps.startRegistration.body.options);
  if (!steps.create.credential) return steps;
  steps.addPasskey = await api('POST', '/v1/auth/passkeys', { ceremony_token: steps.startRegistration.body.ceremony_token, credential: steps.create.credential });
  return steps;
}

/** Steps 3-5: sign out, then sign in with the passkey and ask who we are. Stops at the first failure. */
async function signOutAndInWithPasskey() {
  const steps = {};
  steps.logout = await api('POST', '/v1/auth/logout');
  steps.meSignedOut = await api('GET', '/v1/auth/me');
  steps.startLogin = await api('POST', '/v1/auth/passkeys/login/options');
  if (steps.startLogin.status !== 200) return steps;
  steps.get = await getAssertion(steps.startLogin.body.options);
  if (!steps.get.credential) return steps;
  steps.login = await api('POST', '/v1/auth/passkeys/login', { ceremony_token: steps.startLogin.body.ceremony_token, credential: steps.get.credential, transport: 'cookie' });
  steps.me = await api('GET', '/v1/auth/me');
  return steps;
}

globalThis.passkeyTest = { api, createPasskey, getAssertion, registerWithPasskey, signOutAndInWithPasskey };
`;

const PAGE_HTML = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Passkey test</title><link rel="icon" href="data:,"></head>
<body><p>Passkey browser test</p><script>${PAGE_SCRIPT}</script></body>
</html>`;

// ---- what the page hands back ----

interface ApiCall {
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  text: string;
  body: any;
}
type Json = Record<string, any>;
interface BrowserAnswer {
  credential?: Json;
  error?: string;
}
interface RegistrationSteps {
  register: ApiCall;
  startRegistration?: ApiCall;
  create?: BrowserAnswer;
  addPasskey?: ApiCall;
}
interface SignInSteps {
  logout: ApiCall;
  meSignedOut: ApiCall;
  startLogin: ApiCall;
  get?: BrowserAnswer;
  login?: ApiCall;
  me?: ApiCall;
}

/** Every answer the browser received is checked against openapi.yaml, as the supertest client does. */
function checkContract(...calls: (ApiCall | undefined)[]): void {
  for (const call of calls) if (call) assertMatchesContract(call.method, call.path, call as unknown as Response);
}

/** The page's function `name` with `args` (JSON), run in the browser. */
function inPage<T>(page: Page, name: string, ...args: unknown[]): Promise<T> {
  return page.evaluate(([fn, list]) => (globalThis as any).passkeyTest[fn](...list), [name, args] as const);
}

const b64url = (base64: string) => Buffer.from(base64, 'base64').toString('base64url');

let t: TestApp;
let site: PageServer;
let browser: Browser;

beforeAll(async () => {
  // The application must know its origin before it starts: take a free port first.
  const port = await freePort();
  const origin = `http://localhost:${port}`;
  t = await startTestApp({ APP_ORIGINS: origin, PUBLIC_BASE_URL: origin, WEBAUTHN_RP_ID: 'localhost', BCRYPT_COST: '4' });
  site = await serveWithPage(t.server, PAGE_HTML, { port });
  browser = await launchChromium();
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await site?.close();
  await t?.close();
}, TIMEOUT);

/** A fresh browser profile (no cookies) with its own virtual authenticator, on the test page. */
async function openPage(url = site.url) {
  const context: BrowserContext = await browser.newContext();
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  const authenticator = await addVirtualAuthenticator(page);
  await page.goto(url);
  return { context, page, authenticator, pageErrors };
}

async function onlyCredential(authenticator: VirtualAuthenticator): Promise<VirtualCredential> {
  const credentials = await authenticator.credentials();
  expect(credentials).toHaveLength(1);
  return credentials[0]!;
}

describe('passkeys in headless Chromium', () => {
  it(
    'registers an account and a passkey from the page, signs out, and signs in again with the passkey',
    async () => {
      const { context, page, authenticator, pageErrors } = await openPage();
      try {
        const email = uniqueEmail('browser');

        // 1-2: account and passkey.
        const reg = await inPage<RegistrationSteps>(page, 'registerWithPasskey', email, 'Browser test');
        checkContract(reg.register, reg.startRegistration, reg.addPasskey);
        expect(reg.register).toMatchObject({ status: 201, body: { user: { email } } });
        expect(reg.register.body.token).toBeUndefined(); // cookie transport
        const userId: string = reg.register.body.user.id;
        const sessionCookie = async () => (await context.cookies(site.origin)).find((c) => c.name === 'session');
        const registeredCookie = await sessionCookie();
        expect(registeredCookie).toMatchObject({ domain: 'localhost', path: '/', httpOnly: true, secure: false, sameSite: 'Lax' });

        expect(reg.startRegistration).toMatchObject({ status: 200, body: { ceremony_token: expect.stringMatching(/^cer_/) } });
        const creation = reg.startRegistration!.body.options;
        expect(creation).toMatchObject({
          rp: { id: 'localhost' },
          user: { name: email },
          authenticatorSelection: { residentKey: 'required' },
          attestation: 'none',
        });

        expect(reg.create).toEqual({ credential: expect.any(Object) }); // else: { error: 'the browser refused …' }
        const created = reg.create!.credential!;
        expect(created).toMatchObject({ type: 'public-key', authenticatorAttachment: 'platform', clientExtensionResults: { credProps: { rk: true } } });
        const clientData = JSON.parse(Buffer.from(created.response.clientDataJSON, 'base64url').toString('utf8'));
        expect(clientData).toMatchObject({ type: 'webauthn.create', origin: site.origin, challenge: creation.challenge });

        expect(reg.addPasskey).toMatchObject({ status: 201, body: { name: 'Browser test', last_used_at: null } });
        const apiPasskey = reg.addPasskey!.body;

        // The authenticator keeps one resident credential for the RP, for this user handle.
        const afterRegistration = await onlyCredential(authenticator);
        expect(afterRegistration).toMatchObject({ isResidentCredential: true, rpId: 'localhost' });
        expect(b64url(afterRegistration.credentialId)).toBe(created.id);
        expect(b64url(afterRegistration.userHandle!)).toBe(creation.user.id);

        const rowAfterRegistration = await t.ctx.db('passkeys').where({ user_id: userId }).first();
        expect(rowAfterRegistration).toMatchObject({
          id: apiPasskey.id,
          credential_id: created.id,
          name: 'Browser test',
          device_type: afterRegistration.backupEligibility ? 'multiDevice' : 'singleDevice',
          backed_up: afterRegistration.backupState ?? false,
          last_used_at: null,
        });
        expect(rowAfterRegistration.backed_up).toBe(apiPasskey.backed_up);
        expect(Number(rowAfterRegistration.sign_count)).toBe(afterRegistration.signCount);
        expect(rowAfterRegistration.transports).toEqual(apiPasskey.transports);
        expect(apiPasskey.transports).toEqual(created.response.transports);

        // 3-5: signed out, then signed in with the passkey alone.
        const signIn = await inPage<SignInSteps>(page, 'signOutAndInWithPasskey');
        checkContract(signIn.logout, signIn.meSignedOut, signIn.startLogin, signIn.login, signIn.me);
        expect(signIn.logout.status).toBe(204);
        expect(signIn.meSignedOut).toMatchObject({ status: 401, body: { code: 'unauthenticated' } });

        expect(signIn.startLogin).toMatchObject({
          status: 200,
          body: { ceremony_token: expect.stringMatching(/^cer_/), options: { rpId: 'localhost', allowCredentials: [], userVerification: 'required' } },
        });
        expect(signIn.get).toEqual({ credential: expect.any(Object) });
        const asserted = signIn.get!.credential!;
        expect(asserted.id).toBe(created.id);
        expect(asserted.response.userHandle).toBe(creation.user.id);
        expect(JSON.parse(Buffer.from(asserted.response.clientDataJSON, 'base64url').toString('utf8'))).toMatchObject({
          type: 'webauthn.get',
          origin: site.origin,
          challenge: signIn.startLogin.body.options.challenge,
        });

        expect(signIn.login).toMatchObject({ status: 200, body: { user: { id: userId, mfa: { passkeys: 1 } }, session: { id: expect.any(String) } } });
        expect(signIn.login!.body.token).toBeUndefined();
        const signedInCookie = await sessionCookie(); // a new session, in the cookie
        expect(signedInCookie).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
        expect(signedInCookie!.value).not.toBe(registeredCookie!.value);
        expect(signIn.me).toMatchObject({ status: 200, body: { id: userId, email, mfa: { passkeys: 1 } } });

        // The counter moved forward on the authenticator, and the server kept up with it.
        const afterSignIn = await onlyCredential(authenticator);
        expect(afterSignIn.signCount).toBeGreaterThan(afterRegistration.signCount);
        const row = await t.ctx.db('passkeys').where({ id: apiPasskey.id }).first();
        expect(Number(row.sign_count)).toBe(afterSignIn.signCount);
        expect(row.backed_up).toBe(afterSignIn.backupState ?? false);
        expect(row.last_used_at).toBeInstanceOf(Date);

        // The session of the passkey sign-in is a cookie session of the user.
        const session = await t.ctx.db('sessions').where({ id: signIn.login!.body.session.id }).first();
        expect(session).toMatchObject({ user_id: userId, transport: 'cookie' });

        // Audit trail.
        const added = await t.ctx.db('audit_events').where({ action: 'passkey.added', actor_id: userId });
        expect(added).toHaveLength(1);
        expect(added[0]).toMatchObject({ target_id: apiPasskey.id, data: { backed_up: row.backed_up } });
        const logins = await t.ctx.db('audit_events').where({ action: 'auth.login.succeeded', actor_id: userId }).whereRaw("data->>'method' = 'passkey'");
        expect(logins).toHaveLength(1);
        expect(logins[0]).toMatchObject({ target_id: signIn.login!.body.session.id, data: { method: 'passkey', passkey_id: apiPasskey.id, transport: 'cookie' } });
        expect(await t.ctx.db('audit_events').where({ action: 'auth.login.failed' })).toHaveLength(0);

        expect(pageErrors).toEqual([]);
      } finally {
        await context.close();
      }
    },
    TIMEOUT,
  );

  describe('a passkey sign-in that must be refused', () => {
    let userId: string;
    let passkeyId: string;
    let context: BrowserContext;
    let page: Page;
    let authenticator: VirtualAuthenticator;

    beforeAll(async () => {
      ({ context, page, authenticator } = await openPage());
      const reg = await inPage<RegistrationSteps>(page, 'registerWithPasskey', uniqueEmail('refused'), 'Refused test');
      expect(reg.addPasskey?.status).toBe(201);
      userId = reg.register.body.user.id;
      passkeyId = reg.addPasskey!.body.id;
      const logout = await inPage<ApiCall>(page, 'api', 'POST', '/v1/auth/logout');
      expect(logout.status).toBe(204);
    }, TIMEOUT);
    afterAll(async () => {
      await context?.close();
    }, TIMEOUT);

    const signCount = async () => Number((await t.ctx.db('passkeys').where({ id: passkeyId }).first()).sign_count);
    const failedLogins = (): Promise<Json[]> => t.ctx.db('audit_events').where({ action: 'auth.login.failed' }).whereRaw("data->>'method' = 'passkey'");
    /** The failed passkey sign-ins written since `before` (the test clock stands still: compare ids, not times). */
    const failedSince = async (before: Json[]) => (await failedLogins()).filter((e) => !before.some((b) => b.id === e.id));

    it(
      'from http://127.0.0.1 (an address, not under the RP id): the browser itself refuses, the server sees no sign-in',
      async () => {
        const before = { count: await signCount(), failed: await failedLogins(), authenticator: (await onlyCredential(authenticator)).signCount };
        await page.goto(`http://127.0.0.1:${site.port}${PAGE_PATH}`);
        const start = await inPage<ApiCall>(page, 'api', 'POST', '/v1/auth/passkeys/login/options');
        checkContract(start);
        expect(start.status).toBe(200);
        const answer = await inPage<BrowserAnswer>(page, 'getAssertion', start.body.options);
        // Chromium refuses an RP id that is not the page's domain or a parent of it (and an IP
        // address has no registrable domain): no assertion is made, nothing reaches the server.
        expect(answer).toEqual({ error: expect.stringMatching(/^SecurityError: /) });
        expect((await onlyCredential(authenticator)).signCount).toBe(before.authenticator);
        expect(await signCount()).toBe(before.count);
        expect(await failedSince(before.failed)).toEqual([]);
      },
      TIMEOUT,
    );

    it(
      'from http://localhost:<another port> (the right RP id, an origin not allowed): the browser signs, the server answers 401 invalid_credentials',
      async () => {
        const other = await serveWithPage(t.server, PAGE_HTML);
        try {
          expect(other.port).not.toBe(site.port);
          const before = { count: await signCount(), failed: await failedLogins() };
          await page.goto(other.url);
          const start = await inPage<ApiCall>(page, 'api', 'POST', '/v1/auth/passkeys/login/options');
          expect(start.status).toBe(200);
          const answer = await inPage<BrowserAnswer>(page, 'getAssertion', start.body.options);
          expect(answer).toEqual({ credential: expect.any(Object) });
          const clientData = JSON.parse(Buffer.from(answer.credential!.response.clientDataJSON, 'base64url').toString('utf8'));
          expect(clientData.origin).toBe(other.origin);

          const login = await inPage<ApiCall>(page, 'api', 'POST', '/v1/auth/passkeys/login', {
            ceremony_token: start.body.ceremony_token,
            credential: answer.credential,
            transport: 'cookie',
          });
          checkContract(start, login);
          expect(login).toMatchObject({ status: 401, body: { code: 'invalid_credentials' } });
          const failed = await failedSince(before.failed);
          expect(failed).toHaveLength(1);
          expect(failed[0]).toMatchObject({ actor_id: null, data: { reason: 'invalid_credentials', method: 'passkey', detail: 'assertion_failed' } });
          expect(await signCount()).toBe(before.count); // the refused assertion moved nothing
          // No session came of it: the browser is still signed out.
          const me = await inPage<ApiCall>(page, 'api', 'GET', '/v1/auth/me');
          checkContract(me);
          expect(me.status).toBe(401);
        } finally {
          await other.close();
        }
      },
      TIMEOUT,
    );

    it(
      'a real assertion made on the right origin, sent twice with the same ceremony token: 200, then 401 invalid_credentials',
      async () => {
        await page.goto(site.url);
        const failedBefore = await failedLogins();
        const start = await inPage<ApiCall>(page, 'api', 'POST', '/v1/auth/passkeys/login/options');
        expect(start.status).toBe(200);
        const answer = await inPage<BrowserAnswer>(page, 'getAssertion', start.body.options);
        expect(answer).toEqual({ credential: expect.any(Object) });
        const body = { ceremony_token: start.body.ceremony_token, credential: answer.credential, transport: 'cookie' };

        const first = await inPage<ApiCall>(page, 'api', 'POST', '/v1/auth/passkeys/login', body);
        const replay = await inPage<ApiCall>(page, 'api', 'POST', '/v1/auth/passkeys/login', body);
        checkContract(start, first, replay);
        expect(first).toMatchObject({ status: 200, body: { user: { id: userId } } });
        expect(replay).toMatchObject({ status: 401, body: { code: 'invalid_credentials' } });
        const failed = await failedSince(failedBefore);
        expect(failed).toHaveLength(1);
        expect(failed[0]).toMatchObject({ actor_id: null, data: { reason: 'invalid_credentials', method: 'passkey', detail: 'invalid_ceremony' } });
        expect(await signCount()).toBe((await onlyCredential(authenticator)).signCount);
        const sessions = await t.ctx.db('audit_events').where({ action: 'auth.login.succeeded', actor_id: userId }).whereRaw("data->>'method' = 'passkey'");
        expect(sessions).toHaveLength(1);
      },
      TIMEOUT,
    );
  });
});
