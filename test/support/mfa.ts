// Second factors through the API, as a client would set them up (the typed client, api-client.ts):
// an account with a password, the authenticator app turned on with codes from the independent
// generator (test/support/totp.ts), passkeys made by the software authenticator
// (test/support/webauthn-authenticator.ts).
import type { components } from '../../codegen/api-types';
import type { TestApp } from './test-app';
import { authorization, expectStatus } from './api-client';
import { PASSWORD, signUp } from './accounts';
import { totp } from './totp';
import { SoftwareAuthenticator } from './webauthn-authenticator';

export { PASSWORD };
/** The app origin the MFA tests run under (APP_ORIGINS, and so the WebAuthn origin and RP id). */
export const ORIGIN = 'https://app.example.com';

/** Env for a test app where many sign-ins and registrations happen from one IP. */
export const MFA_TEST_ENV = {
  BCRYPT_COST: '4',
  APP_ORIGINS: ORIGIN,
  RATE_LIMIT_LOGIN_PER_MINUTE: '1000',
  RATE_LIMIT_REGISTER_PER_MINUTE: '1000',
};

export interface TestAccount {
  userId: string;
  email: string;
  token: string;
  auth: string;
}

/** A new account with a password, signed in with a bearer token. */
export async function registerAccount(t: TestApp, tag = 'mfa'): Promise<TestAccount> {
  const { userId, email, token, auth } = await signUp(t, { tag, password: PASSWORD });
  return { userId, email, token, auth };
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
  const headers = authorization(account);
  const setup = await expectStatus(t.api.POST('/v1/auth/mfa/totp', { headers }), 200);
  const confirmed = await expectStatus(t.api.POST('/v1/auth/mfa/totp/confirm', { headers, body: { code: totp(setup.secret, t.clock.now) } }), 200);
  return { secret: setup.secret, recoveryCodes: confirmed.codes };
}

/** Registers a passkey of `authenticator` (a new one when not given) for the account. */
export async function addPasskey(t: TestApp, account: TestAccount, authenticator = new SoftwareAuthenticator({ origin: ORIGIN })) {
  const headers = authorization(account);
  const start = await expectStatus(t.api.POST('/v1/auth/passkeys/registration', { headers, body: {} }), 200);
  const credential = authenticator.create(start.options);
  // The contract types the credential as any JSON object (WebAuthnCredential); the authenticator's is an interface.
  const body = { ceremony_token: start.ceremony_token, credential: credential as unknown as components['schemas']['WebAuthnCredential'] };
  const passkey = await expectStatus(t.api.POST('/v1/auth/passkeys', { headers, body }), 201);
  return { authenticator, passkey, credentialId: credential.id };
}

/** A `verification` ceremony answered by the authenticator: the `passkey` proof of a sensitive change. */
export async function passkeyProof(t: TestApp, account: TestAccount, authenticator: SoftwareAuthenticator) {
  const start = await expectStatus(t.api.POST('/v1/auth/passkeys/verification', { headers: authorization(account) }), 200);
  return { ceremony_token: start.ceremony_token, credential: authenticator.get(start.options) };
}

/** Signs in with the password, expecting the 202 challenge: its body. */
export async function passwordStep(t: TestApp, account: TestAccount, transport: 'bearer' | 'cookie' = 'bearer') {
  const challenge = await expectStatus(t.api.POST('/v1/auth/login', { body: { email: account.email, password: PASSWORD, transport } }), 202);
  if (!challenge.mfa_required) throw new Error('signing in with the password asked for no second factor');
  return challenge;
}

export const auditOf = (t: TestApp, action: string, userId: string) => t.ctx.db('audit_events').where({ action, actor_id: userId }).orderBy('at');
