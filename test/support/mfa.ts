// Second factors through the API, as a client would set them up: an account with a password, the
// authenticator app turned on with codes from the independent generator (test/support/totp.ts),
// passkeys made by the software authenticator (test/support/webauthn-authenticator.ts).
import type { TestApp } from './test-app';
import { totp } from './totp';
import { SoftwareAuthenticator } from './webauthn-authenticator';

export const PASSWORD = 'correct horse battery staple';
/** The app origin the MFA tests run under (APP_ORIGINS, and so the WebAuthn origin and RP id). */
export const ORIGIN = 'https://app.example.com';

/** Env for a test app where many sign-ins and registrations happen from one IP. */
export const MFA_TEST_ENV = {
  BCRYPT_COST: '4',
  APP_ORIGINS: ORIGIN,
  RATE_LIMIT_LOGIN_PER_MINUTE: '1000',
  RATE_LIMIT_REGISTER_PER_MINUTE: '1000',
};

let seq = 0;

export interface TestAccount {
  userId: string;
  email: string;
  token: string;
  auth: string;
}

/** A new account with a password, signed in with a bearer token. */
export async function registerAccount(t: TestApp, tag = 'mfa'): Promise<TestAccount> {
  const email = `${tag}${++seq}-${Date.now()}@example.com`;
  const res = await t.http.post('/v1/auth/register').send({ email, password: PASSWORD, transport: 'bearer' }).expect(201);
  return { userId: res.body.user.id, email, token: res.body.token, auth: `Bearer ${res.body.token}` };
}

/**
 * The current code, after moving the clock on by one 30-second step: a code is accepted once per
 * step, so each use in a test needs a step of its own (as a person would wait for the next code).
 */
export function nextCode(t: TestApp, secret: string): string {
  t.clock.advance(30_000);
  return totp(secret, t.clock.now);
}

/** Turns the authenticator app on: its secret and the first recovery codes. */
export async function enableTotp(t: TestApp, account: TestAccount): Promise<{ secret: string; recoveryCodes: string[] }> {
  const setup = await t.http.post('/v1/auth/mfa/totp').set('Authorization', account.auth).expect(200);
  const confirmed = await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', account.auth).send({ code: totp(setup.body.secret, t.clock.now) }).expect(200);
  return { secret: setup.body.secret, recoveryCodes: confirmed.body.codes };
}

/** Registers a passkey of `authenticator` (a new one when not given) for the account. */
export async function addPasskey(t: TestApp, account: TestAccount, authenticator = new SoftwareAuthenticator({ origin: ORIGIN })) {
  const start = await t.http.post('/v1/auth/passkeys/registration').set('Authorization', account.auth).send({}).expect(200);
  const credential = authenticator.create(start.body.options);
  const added = await t.http.post('/v1/auth/passkeys').set('Authorization', account.auth).send({ ceremony_token: start.body.ceremony_token, credential }).expect(201);
  return { authenticator, passkey: added.body, credentialId: credential.id };
}

/** A `verification` ceremony answered by the authenticator: the `passkey` proof of a sensitive change. */
export async function passkeyProof(t: TestApp, account: TestAccount, authenticator: SoftwareAuthenticator) {
  const start = await t.http.post('/v1/auth/passkeys/verification').set('Authorization', account.auth).expect(200);
  return { ceremony_token: start.body.ceremony_token, credential: authenticator.get(start.body.options) };
}

/** Signs in with the password, expecting the 202 challenge: its body. */
export async function passwordStep(t: TestApp, account: TestAccount, transport: 'bearer' | 'cookie' = 'bearer') {
  const res = await t.http.post('/v1/auth/login').send({ email: account.email, password: PASSWORD, transport }).expect(202);
  return res.body as { challenge_token: string; methods: string[]; expires_at: string; mfa_required: true };
}

export const auditOf = (t: TestApp, action: string, userId: string) => t.ctx.db('audit_events').where({ action, actor_id: userId }).orderBy('at');
