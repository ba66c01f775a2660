// Accounts: registration's account, the password check of a sign-in, password change, and the
// account's life cycle as named workflows — deletion (after a fresh proof: src/signin/step-up.ts),
// disabling and enabling (the command line) — each reached by handlers and the command line alike
// (operator grants: operators.ts). Each change and its audit events share one transaction; mail
// is queued in it and sent after the commit. Rate limits and bcrypt run before a transaction
// opens (src/services.ts refuses them inside one).
import type { Scope } from '../platform/scope';
import type { RuntimeSettings } from '../settings/runtime';
import { userActor, type Actor, type AuditService, type RequestMeta } from '../audit/service';
import type { Limits } from '../ratelimit/limits';
import type { SessionService } from '../sessions/service';
import type { MfaSummary } from '../sessions/second-factors';
import type { SignInChallenges } from '../sessions/challenges';
import type { MailService } from '../mail/service';
import type { OrgService } from '../orgs/service';
import type { PasswordHasher } from './passwords';
import type { EmailVerificationService } from './email-verification';
import { commonErrors } from '../errors';
import { accountErrors } from './errors';
import { isCommonPassword } from './passwords';
import * as store from './store';

export type { UserRow } from './store';

/** How a fresh proof was given (`StepUpProof`, checked by src/signin/step-up.ts). */
export type ProofMethod = 'password' | 'code' | 'passkey';

/** A registration's account, checked and with its password hashed: `prepareRegistration` → `create`. */
export interface NewAccount {
  email: string;
  name: string | null;
  passwordHash: string;
}


type Deps = Scope<{
  runtimeSettings: RuntimeSettings;
  audit: AuditService;
  limits: Limits;
  passwords: PasswordHasher;
  sessions: SessionService;
  challenges: SignInChallenges;
  mail: MailService;
  emailVerification: EmailVerificationService;
  orgs: OrgService;
}>;

export class AccountService {
  constructor(
    private readonly s: Deps,
  ) {}

  /**
   * The password rules beyond the contract's 8–128 characters: the configured minimum may be
   * stricter, and the 10,000 most common passwords are refused. Errors name `body.<field>`.
   */
  checkNewPassword(password: string, field = 'password'): void {
    const min = this.s.runtimeSettings.get('auth.password_min_length');
    if ([...password].length < min) {
      throw commonErrors.validation(undefined, { errors: [{ message: `must NOT have fewer than ${min} characters`, location: `body.${field}` }] });
    }
    if (isCommonPassword(password)) {
      throw accountErrors.passwordTooCommon(undefined, { errors: [{ message: 'is among the most common passwords', location: `body.${field}` }] });
    }
  }

  /**
   * POST /v1/auth/register, before its transaction: 429 over the per-IP limit; 403 while
   * registration is closed; the password rules; then the hash (bcrypt, outside any transaction).
   */
  async prepareRegistration(input: { email: string; password: string; name?: string | null }, meta: RequestMeta): Promise<NewAccount> {
    await this.s.limits.hit({ limit: 'register.ip', subject: meta.ip ?? 'unknown' });
    if (!this.s.runtimeSettings.get('auth.registration_enabled')) throw accountErrors.registrationClosed();
    this.checkNewPassword(input.password);
    return { email: store.normaliseEmail(input.email), name: input.name ?? null, passwordHash: await this.s.passwords.hash(input.password) };
  }

  /**
   * The account of a registration, in the caller's transaction (src/signin signs it in): email
   * unverified, a verification code mailed, `auth.registered`. 409 `email_taken`.
   */
  async create(account: NewAccount, meta: RequestMeta): Promise<store.UserRow> {
    const user = await store.createUser(this.s.db, { ...account, now: this.s.now() });
    if (!user) throw accountErrors.emailTaken();
    const actor = userActor(user.id);
    await this.s.emailVerification.queueCode(user, { actor, meta });
    await this.s.audit.record({ action: 'auth.registered', actor, target: { kind: 'user', id: user.id }, data: { method: 'password' }, meta });
    return user;
  }

  /**
   * The password of a sign-in (POST /v1/auth/login). Unknown email, wrong password and an account
   * without a password all cost exactly one bcrypt compare and answer the same 401
   * `invalid_credentials` (with `auth.login.failed`). 429 over the per-IP or per-address limit.
   * `newHash`: the password hashed again when its hash was made with another cost than the
   * configured one (the sign-in stores it with `replacePasswordHash`). `secondFactors` are read
   * with the user, in the same statement.
   */
  async checkPassword(emailInput: string, password: string, meta: RequestMeta): Promise<{ user: store.UserRow; secondFactors: MfaSummary; newHash: string | null }> {
    const email = store.normaliseEmail(emailInput);
    await this.s.limits.hit({ limit: 'login.ip', subject: meta.ip ?? 'unknown' }, { limit: 'login.email', subject: email });
    const found = await store.findUserForSignIn(this.s.db, email);
    const matches = await this.s.passwords.verify(password, found?.user.passwordHash ?? null);
    if (!found || !matches) {
      await this.s.audit.record({
        action: 'auth.login.failed',
        actor: userActor(found?.user.id ?? null),
        target: found ? { kind: 'user', id: found.user.id } : null,
        data: { reason: 'invalid_credentials', method: 'password' },
        meta,
      });
      throw accountErrors.invalidCredentials();
    }
    const { user, secondFactors } = found;
    return { user, secondFactors, newHash: this.s.passwords.needsRehash(user.passwordHash!) ? await this.s.passwords.hash(password) : null };
  }

  /** Stores a rehashed password, unless it changed meanwhile (not a change of password). */
  async replacePasswordHash(user: store.UserRow, newHash: string): Promise<void> {
    await store.replacePasswordHash(this.s.db, user.id, user.passwordHash!, newHash);
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
   * DELETE /v1/auth/me, after a fresh proof (src/signin/step-up.ts), in one transaction: every session revoked, the
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

  /**
   * disable-account / enable-account (the command line), in one transaction: the flag (every
   * sign-in then answers 403 `account_disabled`), and on disabling the end of the account's
   * sessions and of its sign-ins waiting for a second factor; `auth.account.disabled` /
   * `auth.account.enabled`. Null when no account has the address.
   */
  setDisabled(email: string, disabled: boolean, actor: Actor, data: Record<string, unknown>): Promise<{ userId: string; sessionsRevoked: number } | null> {
    return this.s.transaction(async (tx) => {
      const userId = await store.setDisabled(tx.db, email, disabled, tx.now());
      if (!userId) return null;
      const sessionsRevoked = disabled ? await tx.sessions.revokeAllOf(userId, null) : 0;
      if (disabled) await tx.challenges.endAllOf(userId);
      await tx.audit.record({
        action: disabled ? 'auth.account.disabled' : 'auth.account.enabled',
        actor,
        target: { kind: 'user', id: userId },
        data: { ...data, sessions_revoked: sessionsRevoked },
      });
      return { userId, sessionsRevoked };
    });
  }
}
