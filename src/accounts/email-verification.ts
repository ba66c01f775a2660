// Email verification (POST /v1/auth/verify-email and /verify-email/resend): a 6-digit code from
// codes.ts (15 minutes, 5 wrong tries, HMAC at rest, constant-time compare), mailed through the
// `service.mail.send` job queued in the same transaction as the code, handed over after commit.
import type { Knex } from 'knex';
import type { AppContext } from '../app-context';
import { recordAudit, type RequestMeta } from '../audit/store';
import { AppError } from '../http/problem';
import { queueMail } from '../mail/outbox';
import { templates } from '../mail/templates';
import { enforce } from '../ratelimit/limiter';
import type { SessionUser } from '../sessions/store';
import { CODE_TTL_MS, consumeCode, issueCode } from './codes';
import { findUserById } from './store';

const CODE_MINUTES = CODE_TTL_MS / 60_000;

/** Resends are limited per address (DESIGN 6: 3 per 15 minutes per email). */
export const resendLimitKey = (email: string) => `verify-email:email:${email}`;

export function emailLimit(app: AppContext) {
  return { max: app.config.rateLimits.emailPer15Minutes, windowSeconds: 15 * 60 };
}

const alreadyVerified = () => new AppError('already_verified', 409, 'Your email address is already verified.');
export const invalidCode = () => new AppError('invalid_code', 401, 'The code is wrong or has expired.');

/** The user as the session sees it (the shape `findLiveSession` returns). */
async function loadSessionUser(db: Knex | Knex.Transaction, userId: string): Promise<SessionUser | null> {
  const user = await findUserById(db, userId);
  if (!user) return null;
  const { passwordHash: _secret, ...view } = user;
  return view;
}

/**
 * Issues a verification code for the user and queues its mail inside `trx` (and the audit event
 * `auth.email.verification_sent`). The caller commits, then hands the returned run over.
 * Also usable by registration.
 */
export async function queueVerificationCode(
  trx: Knex.Transaction,
  app: AppContext,
  user: { id: string; email: string },
  meta: RequestMeta,
  reason: 'registration' | 'resend' = 'resend',
) {
  const { code, expiresAt } = await issueCode(trx, app.config.sessionSecret, user.id, 'verify_email', app.now());
  const actor = { kind: 'user' as const, id: user.id };
  const run = await queueMail(trx, app, { to: user.email, ...templates.verifyEmail({ code, minutes: CODE_MINUTES }) }, { actor, meta });
  await recordAudit(trx, {
    action: 'auth.email.verification_sent',
    actor,
    target: { kind: 'user', id: user.id },
    data: { reason, job_run_id: run.id },
    meta,
  });
  return { run, expiresAt };
}

/** POST /v1/auth/verify-email/resend: 409 when verified, 429 past 3 per 15 minutes, else a new code (the old one dies). */
export async function resendVerification(app: AppContext, userId: string, meta: RequestMeta): Promise<{ expiresAt: Date }> {
  const user = await loadSessionUser(app.db, userId);
  if (!user) throw new AppError('unauthenticated', 401, 'Sign in to use this operation.');
  if (user.emailVerified) throw alreadyVerified();
  await enforce(app.redis, app.config.redisPrefix, [{ key: resendLimitKey(user.email), limit: emailLimit(app) }]);
  const { run, expiresAt } = await app.db.transaction(async (trx) => {
    const locked = await trx('users').where({ id: userId }).forUpdate().first('email_verified_at');
    if (!locked) throw new AppError('unauthenticated', 401, 'Sign in to use this operation.');
    if (locked.email_verified_at !== null) throw alreadyVerified();
    return queueVerificationCode(trx, app, user, meta, 'resend');
  });
  await app.jobs.handOver([run]);
  return { expiresAt };
}

/**
 * POST /v1/auth/verify-email: the right live code marks the email verified (`auth.email.verified`).
 * A wrong one counts a failure (the fifth kills the code) and writes
 * `auth.email.verification_failed`; that transaction commits before 401 `invalid_code` is thrown.
 */
export async function verifyEmail(app: AppContext, userId: string, code: string, meta: RequestMeta): Promise<SessionUser> {
  const outcome = await app.db.transaction(async (trx): Promise<'verified' | 'already' | 'wrong' | 'gone'> => {
    const user = await trx('users').where({ id: userId }).forUpdate().first('id', 'email_verified_at');
    if (!user) return 'gone';
    if (user.email_verified_at !== null) return 'already';
    const now = app.now();
    const actor = { kind: 'user' as const, id: userId };
    const target = { kind: 'user', id: userId };
    if (await consumeCode(trx, app.config.sessionSecret, userId, 'verify_email', code, now)) {
      await trx('users').where({ id: userId }).update({ email_verified_at: now, updated_at: now });
      await recordAudit(trx, { action: 'auth.email.verified', actor, target, meta });
      return 'verified';
    }
    await recordAudit(trx, { action: 'auth.email.verification_failed', actor, target, meta });
    return 'wrong';
  });
  if (outcome === 'gone') throw new AppError('unauthenticated', 401, 'Sign in to use this operation.');
  if (outcome === 'already') throw alreadyVerified();
  if (outcome === 'wrong') throw invalidCode();
  const user = await loadSessionUser(app.db, userId);
  if (!user) throw new AppError('unauthenticated', 401, 'Sign in to use this operation.');
  return user;
}
