// Forgot and reset (POST /v1/auth/password/forgot and /password/reset).
//
// Forgot is constant by construction: the request counts the per-address limit and enqueues one
// `service.auth.password_reset` run, the same statement for known and unknown addresses, and
// answers 202. The job looks the account up and, when there is one, issues the code and queues its
// mail (and `auth.password.reset_requested`) in one transaction. No sleeps, no timing to even out.
//
// Reset checks the code in one transaction, hashes the new password with no transaction open,
// then uses the code and sets the password in a second one (a code used meanwhile loses).
import type { RequestMeta } from '../audit/service';
import type { OperatorGrants } from './operators';
import type { Scope } from '../platform/scope';
import type { AuditService } from '../audit/service';
import type { Limits } from '../ratelimit/limits';
import type { OneTimeCodes } from './one-time-codes';
import type { MailService } from '../mail/service';
import type { JobOutbox } from '../jobs/outbox';
import type { PasswordHasher } from './passwords';
import type { AccountService } from './service';
import type { SessionService } from '../sessions/service';
import { accountErrors } from './errors';
import { CODE_TTL_MS } from './one-time-codes';
import * as store from './store';

export const PASSWORD_RESET_KIND = 'service.auth.password_reset';
const CODE_MINUTES = CODE_TTL_MS / 60_000;

/** The payload of a `service.auth.password_reset` run: the address (`to`, erased with the account) and who asked. */
export interface PasswordResetPayload {
  to: string;
  meta: { request_id: string | null; ip: string | null; user_agent: string | null };
}

type Deps = Scope<{ audit: AuditService; limits: Limits; codes: OneTimeCodes; mail: MailService; outbox: JobOutbox; passwords: PasswordHasher; accounts: AccountService; sessions: SessionService; operators: OperatorGrants }>;

export class PasswordResetService {
  constructor(private readonly s: Deps) {}

  /** POST /v1/auth/password/forgot: always the same work and the same answer, account or not. */
  async request(rawEmail: string, meta: RequestMeta): Promise<{ codeExpiresIn: number }> {
    const email = store.normaliseEmail(rawEmail);
    await this.s.limits.hit({ limit: 'password_forgot.email', subject: email });
    const payload: PasswordResetPayload = { to: email, meta: { request_id: meta.requestId, ip: meta.ip, user_agent: meta.userAgent } };
    await this.s.outbox.enqueue(PASSWORD_RESET_KIND, { ...payload }, { actor: { kind: 'user', id: null }, meta });
    return { codeExpiresIn: CODE_TTL_MS / 1000 };
  }

  /** The job's work: for a known address, a new reset code, its mail and the audit event, in one transaction. */
  async sendCode(payload: PasswordResetPayload): Promise<'sent' | 'no_account'> {
    const meta: RequestMeta = { requestId: payload.meta.request_id, ip: payload.meta.ip, userAgent: payload.meta.user_agent };
    return this.s.transaction(async (tx) => {
      const user = await store.findUserByEmail(tx.db, payload.to);
      if (!user) return 'no_account';
      const { code } = await tx.codes.issue(user.id, 'password_reset');
      const actor = { kind: 'user' as const, id: null };
      const run = await tx.mail.queue(user.email, { template: 'passwordReset', params: { minutes: CODE_MINUTES }, secret: { code } }, { actor, meta });
      await tx.audit.record({ action: 'auth.password.reset_requested', actor, target: { kind: 'user', id: user.id }, data: { job_run_id: run.id }, meta });
      return 'sent';
    });
  }

  /**
   * POST /v1/auth/password/reset: sets a new password with a reset code; every session revoked,
   * none created, the email verified (the code proves the mailbox), a notice mailed,
   * `auth.password.reset`. Wrong, expired, used or replaced codes and unknown addresses all answer
   * 401 `invalid_code`; a wrong try counts a failure (the fifth kills the code, the account's daily
   * cap counts it too) and writes `auth.password.reset_failed`.
   */
  async reset(input: { email: string; code: string; newPassword: string }, meta: RequestMeta): Promise<{ revokedSessions: number }> {
    this.s.accounts.checkNewPassword(input.newPassword, 'new_password');
    const email = store.normaliseEmail(input.email);
    const user = await store.findUserByEmail(this.s.db, email);
    const account = { email, userId: user?.id ?? null };
    await this.s.codes.beginAttempt(account, 'password_reset', meta);
    const codeId = await this.s.transaction(async (tx) => {
      // An unknown address does the same lookup against an id no user has: no account, no audit.
      const id = await tx.codes.check(user?.id ?? `usr_unknown:${email}`, 'password_reset', input.code);
      if (id === null && user) {
        await tx.audit.record({ action: 'auth.password.reset_failed', actor: { kind: 'user', id: null }, target: { kind: 'user', id: user.id }, meta });
      }
      return id;
    });
    if (codeId === null || !user) {
      await this.s.codes.settle(account, false);
      throw accountErrors.invalidCode();
    }
    const hash = await this.s.passwords.hash(input.newPassword);
    const revoked = await this.s.transaction(async (tx) => {
      if (!(await tx.codes.use(codeId))) return null;
      const now = tx.now();
      await store.setPasswordFromReset(tx.db, user.id, hash, now);
      // The code proved the mailbox: the email is verified now, if it was not.
      if (!user.emailVerified) await tx.operators.grantIfListed(user.id);
      const count = await tx.sessions.revokeAllOf(user.id, null);
      const actor = { kind: 'user' as const, id: user.id };
      await tx.audit.record({ action: 'auth.password.reset', actor, target: { kind: 'user', id: user.id }, data: { revoked_sessions: count }, meta });
      await tx.mail.queue(user.email, { template: 'passwordChanged', params: { at: now.toISOString() } }, { actor, meta });
      return count;
    });
    await this.s.codes.settle(account, revoked !== null);
    if (revoked === null) throw accountErrors.invalidCode();
    return { revokedSessions: revoked };
  }
}
