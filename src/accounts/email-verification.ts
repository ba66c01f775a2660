// Email verification (POST /v1/auth/verify-email and /verify-email/resend): a one-time code
// (one-time-codes.ts) mailed through `service.mail.send`, queued in the same transaction as the
// code; the code travels in the run's `secret`, never in a subject, log line or stored copy.
import type { Actor, RequestMeta } from '../audit/service';
import type { OperatorGrants } from './operators';
import type { Scope } from '../platform/scope';
import type { AuditService } from '../audit/service';
import type { Limits } from '../ratelimit/limits';
import type { OneTimeCodes } from './one-time-codes';
import type { MailService } from '../mail/service';
import type { Caller, SessionUser } from '../sessions/service';
import { commonErrors } from '../errors';
import { accountErrors } from './errors';
import { shownSecondFactors } from '../sessions/second-factors';
import { CODE_TTL_MS } from './one-time-codes';
import * as store from './store';

const CODE_MINUTES = CODE_TTL_MS / 60_000;

type Deps = Scope<{ audit: AuditService; limits: Limits; codes: OneTimeCodes; mail: MailService; emailVerification: EmailVerificationService; operators: OperatorGrants }>;

export class EmailVerificationService {
  constructor(private readonly s: Deps) {}

  /** Issues a verification code and queues its mail (registration and resend, inside their transaction). */
  async queueCode(user: { id: string; email: string }, by: { actor: Actor; meta: RequestMeta }): Promise<{ jobRunId: number; expiresAt: Date }> {
    const { code, expiresAt } = await this.s.codes.issue(user.id, 'verify_email');
    const run = await this.s.mail.queue(user.email, { template: 'verifyEmail', params: { minutes: CODE_MINUTES }, secret: { code } }, by);
    return { jobRunId: run.id, expiresAt };
  }

  /** POST /v1/auth/verify-email/resend: 409 when verified, 429 past the per-address limit, else a new code (the old one dies). */
  async resend(caller: Caller, meta: RequestMeta): Promise<{ expiresAt: Date }> {
    if (caller.user.emailVerified) throw accountErrors.alreadyVerified();
    await this.s.limits.hit({ limit: 'verification_resend.email', subject: caller.user.email });
    return this.s.transaction(async (tx) => {
      const user = await store.lockUser(tx.db, caller.userId);
      if (!user) throw commonErrors.unauthenticated();
      if (user.emailVerified) throw accountErrors.alreadyVerified();
      const actor = { kind: 'user' as const, id: user.id };
      const { jobRunId, expiresAt } = await tx.emailVerification.queueCode(user, { actor, meta });
      await tx.audit.record({ action: 'auth.email.verification_sent', actor, target: { kind: 'user', id: user.id }, data: { reason: 'resend', job_run_id: jobRunId }, meta });
      return { expiresAt };
    });
  }

  /**
   * POST /v1/auth/verify-email: the right live code marks the email verified (`auth.email.verified`).
   * A wrong one counts a failure (the fifth kills the code; the account's daily cap counts it too)
   * and writes `auth.email.verification_failed`, committed before 401 `invalid_code` is thrown.
   */
  async verify(caller: Caller, code: string, meta: RequestMeta): Promise<SessionUser> {
    const account = { email: caller.user.email, userId: caller.userId };
    if (caller.user.emailVerified) throw accountErrors.alreadyVerified();
    await this.s.codes.beginAttempt(account, 'verify_email', meta);
    const outcome = await this.s.transaction(async (tx): Promise<'verified' | 'already' | 'wrong' | 'gone'> => {
      const user = await store.lockUser(tx.db, caller.userId);
      if (!user) return 'gone';
      if (user.emailVerified) return 'already';
      const actor = { kind: 'user' as const, id: user.id };
      const target = { kind: 'user', id: user.id };
      if (await tx.codes.consume(user.id, 'verify_email', code)) {
        await store.markEmailVerified(tx.db, user.id, tx.now());
        await tx.audit.record({ action: 'auth.email.verified', actor, target, meta });
        await tx.operators.grantIfListed(user.id);
        return 'verified';
      }
      await tx.audit.record({ action: 'auth.email.verification_failed', actor, target, meta });
      return 'wrong';
    });
    await this.s.codes.settle(account, outcome !== 'wrong');
    if (outcome === 'gone') throw commonErrors.unauthenticated();
    if (outcome === 'already') throw accountErrors.alreadyVerified();
    if (outcome === 'wrong') throw accountErrors.invalidCode();
    const user = await store.findUserById(this.s.db, caller.userId);
    if (!user) throw commonErrors.unauthenticated();
    const { passwordHash: _secret, ...view } = user;
    return { ...view, mfa: shownSecondFactors(caller.user) };
  }
}
