// Accounts: registration, password sign-in, password change, fresh proofs for sensitive changes,
// and account deletion (operator grants: operators.ts). Each change and its audit events share one transaction;
// mail is queued in it and sent after the commit. Rate limits and bcrypt run before a transaction
// opens (src/services.ts refuses them inside one).
import type { Services } from '../services';
import type { Actor, RequestMeta } from '../audit/service';
import type { NewSession, Transport } from '../sessions/service';
import type { SignInOutcome } from '../mfa/service';
import type { CeremonyPurpose } from '../passkeys/store';
import type { Credential } from '../passkeys/service';
import { commonErrors } from '../errors';
import { accountErrors } from './errors';
import { accountView, NO_SECOND_FACTOR, type AccountView } from './me';
import { isCommonPassword } from './passwords';
import * as store from './store';

/** A completed sign-in: what the HTTP edge turns into the LoginSuccess body (and the cookie). */
export interface IssuedSession {
  user: AccountView;
  session: NewSession;
  transport: Transport;
}

/** A fresh proof for a sensitive change (`StepUpProof` in the contract): exactly one of these. */
export interface StepUpProof {
  code?: string;
  passkey?: { ceremonyToken: string; credential: Credential };
  password?: string;
}

export type ProofMethod = 'password' | 'code' | 'passkey';

export const proofMethod = (proof: StepUpProof): ProofMethod => (proof.password !== undefined ? 'password' : proof.code !== undefined ? 'code' : 'passkey');

const userActor = (id: string | null): Actor => ({ kind: 'user', id });

export class AccountService {
  constructor(
    private readonly s: Pick<Services, 'db' | 'now' | 'config' | 'settings' | 'audit' | 'limits' | 'passwords' | 'transaction' | 'sessions' | 'mail' | 'emailVerification' | 'orgs' | 'mfa' | 'totp' | 'passkeys'>,
  ) {}

  /**
   * The password rules beyond the contract's 8–128 characters: the configured minimum may be
   * stricter, and the 10,000 most common passwords are refused. Errors name `body.<field>`.
   */
  checkNewPassword(password: string, field = 'password'): void {
    const min = this.s.settings.get('auth.password_min_length');
    if ([...password].length < min) {
      throw commonErrors.validation(undefined, { errors: [{ message: `must NOT have fewer than ${min} characters`, location: `body.${field}` }] });
    }
    if (isCommonPassword(password)) {
      throw accountErrors.passwordTooCommon(undefined, { errors: [{ message: 'is among the most common passwords', location: `body.${field}` }] });
    }
  }

  /**
   * POST /v1/auth/register: creates the account (email unverified), mails a verification code and
   * signs the new account in, in one transaction with `auth.registered` and `auth.login.succeeded`.
   * 429 over the per-IP limit; 403 while registration is closed; 409 `email_taken`.
   */
  async register(input: { email: string; password: string; name?: string | null; transport?: Transport }, meta: RequestMeta): Promise<IssuedSession> {
    await this.s.limits.hit({ limit: 'register.ip', subject: meta.ip ?? 'unknown' });
    if (!this.s.settings.get('auth.registration_enabled')) throw accountErrors.registrationClosed();
    this.checkNewPassword(input.password);
    const transport = input.transport ?? 'cookie';
    const email = store.normaliseEmail(input.email);
    const passwordHash = await this.s.passwords.hash(input.password);
    return this.s.transaction(async (tx) => {
      const user = await store.createUser(tx.db, { email, name: input.name ?? null, passwordHash, now: tx.now() });
      if (!user) throw accountErrors.emailTaken();
      const actor = userActor(user.id);
      await tx.emailVerification.queueCode(user, { actor, meta });
      const session = await tx.sessions.start({ userId: user.id, transport, ip: meta.ip, userAgent: meta.userAgent });
      await tx.audit.record({ action: 'auth.registered', actor, target: { kind: 'user', id: user.id }, data: { method: 'password' }, meta });
      await tx.audit.record({
        action: 'auth.login.succeeded',
        actor,
        target: { kind: 'session', id: session.id },
        data: { method: 'password', transport, via: 'register' },
        meta,
      });
      return { user: accountView(user, NO_SECOND_FACTOR), session, transport };
    });
  }

  /**
   * POST /v1/auth/login with email and password. Unknown email, wrong password and an account
   * without a password all cost exactly one bcrypt compare and answer the same 401
   * `invalid_credentials`. A hash made with another cost than the configured one is replaced on
   * success. 429 over the per-IP or per-address limit. A user with a second factor gets a
   * challenge instead of a session (src/mfa/service.ts `signIn`, shared by every way of signing in).
   */
  async login(input: { email: string; password: string; transport?: Transport }, meta: RequestMeta): Promise<SignInOutcome> {
    const email = store.normaliseEmail(input.email);
    await this.s.limits.hit({ limit: 'login.ip', subject: meta.ip ?? 'unknown' }, { limit: 'login.email', subject: email });
    const user = await store.findUserByEmail(this.s.db, email);
    const matches = await this.s.passwords.verify(input.password, user?.passwordHash ?? null);
    if (!user || !matches) {
      await this.s.audit.record({
        action: 'auth.login.failed',
        actor: userActor(user?.id ?? null),
        target: user ? { kind: 'user', id: user.id } : null,
        data: { reason: 'invalid_credentials', method: 'password' },
        meta,
      });
      throw accountErrors.invalidCredentials();
    }
    const rehashed = this.s.passwords.needsRehash(user.passwordHash!) ? await this.s.passwords.hash(input.password) : null;
    return this.s.mfa.signIn(user, { firstFactor: 'password', transport: input.transport ?? 'cookie' }, meta, async (tx) => {
      if (rehashed) await store.replacePasswordHash(tx.db, user.id, user.passwordHash!, rehashed);
    });
  }

  /** Locks the user's row (for the rest of the transaction) and counts the ways they can sign in; null when gone. */
  lockSignInMethods(userId: string): Promise<store.SignInMethods | null> {
    return store.lockSignInMethods(this.s.db, userId);
  }

  /** The account with this (normalised) email, or null. */
  findUserByEmail(email: string): Promise<store.UserRow | null> {
    return store.findUserByEmail(this.s.db, email);
  }

  /** A new account from a social sign-in, without password; null when the email has an account. */
  createSocialUser(input: { email: string; name: string | null; emailVerified: boolean }): Promise<store.UserRow | null> {
    return store.createUser(this.s.db, { ...input, now: this.s.now() });
  }

  /** The account's row, or null when it is gone. */
  findUser(userId: string): Promise<store.UserRow | null> {
    return store.findUserById(this.s.db, userId);
  }

  /**
   * PUT /v1/auth/password: checks the current password (a wrong one counts towards the sign-in
   * limit of the address; a right one is given back), sets the new one and revokes every other
   * session; mails the passwordChanged notice; `auth.password.changed`.
   */
  async changePassword(input: { userId: string; sessionId: string; currentPassword: string; newPassword: string }, meta: RequestMeta): Promise<{ revokedSessions: number }> {
    this.checkNewPassword(input.newPassword, 'new_password');
    const user = await store.findUserById(this.s.db, input.userId);
    if (!user) throw commonErrors.unauthenticated();
    if (user.passwordHash === null) throw accountErrors.passwordNotSet();
    const attempt = { limit: 'login.email' as const, subject: user.email };
    await this.s.limits.hit(attempt);
    if (!(await this.s.passwords.verify(input.currentPassword, user.passwordHash))) {
      throw accountErrors.invalidCredentials('The current password is wrong.');
    }
    await this.s.limits.refund(attempt);
    const newHash = await this.s.passwords.hash(input.newPassword);
    return this.s.transaction(async (tx) => {
      // Only if the password did not change meanwhile (a concurrent change or reset wins).
      if (!(await store.replacePasswordHash(tx.db, user.id, user.passwordHash!, newHash, tx.now()))) {
        throw accountErrors.invalidCredentials('The current password is wrong.');
      }
      const revoked = await tx.sessions.revokeAllOf(user.id, input.sessionId);
      const actor = userActor(user.id);
      await tx.audit.record({ action: 'auth.password.changed', actor, target: { kind: 'user', id: user.id }, data: { revoked_sessions: revoked }, meta });
      await tx.mail.queue(user.email, { template: 'passwordChanged', params: { at: tx.now().toISOString() } }, { actor, meta });
      return { revokedSessions: revoked };
    });
  }

  /**
   * Checks a fresh proof for a sensitive change. Every proof counts towards `step_up.user` first,
   * so the 6th try in 15 minutes is refused (429) whether or not it is right; a right one resets
   * the count. 401 `invalid_credentials` for a wrong password, 401 `invalid_code` for a TOTP code
   * that is wrong or used before, or a passkey response that does not verify (its ceremony must be
   * the user's, of purpose `verification`, or one of `passkeyPurposes`); 422
   * `second_factor_required` for a password while a second factor is on. A wrong proof writes
   * `auth.step_up.failed`. A code or passkey is used up by this check.
   */
  async verifyFreshProof(
    input: { userId: string; proof: StepUpProof; operation: string; passkeyPurposes?: CeremonyPurpose[] },
    meta: RequestMeta,
  ): Promise<ProofMethod> {
    const { userId, proof } = input;
    const method = proofMethod(proof);
    const attempt = { limit: 'step_up.user' as const, subject: userId };
    await this.s.limits.hit(attempt);
    let ok = false;
    let reason: string | undefined;
    if (method === 'password') {
      if ((await this.s.mfa.state(userId)).enabled) {
        throw accountErrors.secondFactorRequired(undefined, {
          errors: [{ message: 'not accepted while a second factor is on; give code or passkey', location: 'body.password' }],
        });
      }
      const user = await store.findUserById(this.s.db, userId);
      ok = await this.s.passwords.verify(proof.password!, user?.passwordHash ?? null);
    } else if (method === 'code') {
      ok = await this.s.totp.useCode(userId, proof.code!);
    } else {
      const checked = await this.s.passkeys.verifyAssertion({
        ceremonyToken: proof.passkey!.ceremonyToken,
        credential: proof.passkey!.credential,
        purposes: input.passkeyPurposes ?? ['verification'],
        userId,
        requireUserVerification: false,
      });
      ok = checked.ok;
      if (!checked.ok) reason = checked.reason;
    }
    if (ok) {
      await this.s.limits.reset(attempt);
      return method;
    }
    await this.s.audit.record({
      action: 'auth.step_up.failed',
      actor: userActor(userId),
      target: { kind: 'user', id: userId },
      data: { operation: input.operation, method, ...(reason ? { reason } : {}) },
      meta,
    });
    if (method === 'password') throw accountErrors.invalidCredentials('The password is wrong.');
    throw accountErrors.invalidCode(method === 'code' ? 'The code is wrong or has already been used.' : 'The passkey response is not valid.');
  }

  /**
   * DELETE /v1/auth/me, after `verifyFreshProof`, in one transaction: every session revoked, the
   * personal data the service keeps elsewhere erased (mail records and job payloads lose the
   * address, the user's audit events their ip and user agent: the actor id stays, a pseudonym),
   * `auth.account.deleted` recorded, and the users row deleted (sessions, codes, second factors and passkeys cascade), so
   * the email can register again at once. Then the rate-limit windows that name it are dropped.
   */
  async deleteAccount(input: { userId: string; proofMethod: ProofMethod }, meta: RequestMeta): Promise<{ sessionsRevoked: number }> {
    const { userId } = input;
    const deleted = await this.s.transaction(async (tx) => {
      const user = await store.lockUser(tx.db, userId);
      // Deleted meanwhile by a concurrent request: its session is gone too, so answer as signed out.
      if (!user) throw commonErrors.unauthenticated();
      // 409 `last_owner` while the only owner of an organisation with other members; else the memberships go.
      await tx.orgs.removeAccountMemberships(userId, meta);
      const sessionsRevoked = await tx.sessions.revokeAllOf(userId, null);
      await tx.mail.forgetAddress(user.email);
      await tx.audit.erasePersonalData(userId, user.email);
      await tx.audit.record({
        action: 'auth.account.deleted',
        actor: userActor(userId),
        target: { kind: 'user', id: userId },
        data: { proof: input.proofMethod, sessions_revoked: sessionsRevoked },
        meta: { requestId: meta.requestId, ip: null, userAgent: null },
      });
      await store.deleteUser(tx.db, userId);
      return { sessionsRevoked, email: user.email };
    });
    // After the commit (Redis is never called inside a transaction): rate-limit windows keyed by
    // the address or the user id. They expire within a day anyway; this makes it now.
    await Promise.all([this.s.limits.forget(deleted.email), this.s.limits.forget(userId)]).catch(() => undefined);
    return { sessionsRevoked: deleted.sessionsRevoked };
  }
}
