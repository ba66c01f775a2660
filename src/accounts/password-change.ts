// Passwords after sign-up: change (PUT /v1/auth/password), forgot (POST /v1/auth/password/forgot)
// and reset with a mailed code (POST /v1/auth/password/reset). Codes come from codes.ts (6 digits,
// 15 minutes, 5 wrong tries, HMAC at rest, constant-time compare); mail is queued with the change
// and handed over after commit; audit events are written in the same transaction.
import { randomInt } from 'node:crypto';
import type { AppContext } from '../app-context';
import { recordAudit, type RequestMeta } from '../audit/store';
import { AppError } from '../http/problem';
import { queueMail } from '../mail/outbox';
import { templates } from '../mail/templates';
import { enforce, hitAll } from '../ratelimit/limiter';
import { revokeOtherSessions } from '../sessions/store';
import { CODE_TTL_MS, consumeCode, issueCode } from './codes';
import { emailLimit, invalidCode } from './email-verification';
import { hashPassword, verifyPassword } from './passwords';
import { checkNewPassword } from './sign-in';
import { findUserByEmail, normaliseEmail } from './store';

const CODE_MINUTES = CODE_TTL_MS / 60_000;

/** Forgot-password requests are limited per address, known or not (DESIGN 6: 3 per 15 minutes). */
export const forgotLimitKey = (email: string) => `forgot:email:${email}`;
/**
 * The sign-in limit per address (10 per minute): wrong `current_password` tries count towards it.
 * Must be the key login uses for its per-email limit.
 */
export const loginEmailLimitKey = (email: string) => `login:email:${email}`;

// ----- change ----------------------------------------------------------------------------------

/**
 * Is the sign-in limit for this address already spent? Reads the limiter's counter without
 * counting (the limiter has no peek): a request is only counted when its password is wrong.
 */
async function loginLimitSpent(app: AppContext, email: string): Promise<number | null> {
  const redisKey = `${app.config.redisPrefix}rl:${loginEmailLimitKey(email)}`;
  const result = await app.redis.multi().get(redisKey).pttl(redisKey).exec();
  const count = Number(result?.[0]?.[1] ?? 0);
  if (count < app.config.rateLimits.loginPerMinute) return null;
  const ttlMs = Number(result?.[1]?.[1] ?? 60_000);
  return Math.max(1, Math.ceil(ttlMs / 1000));
}

const rateLimited = (retryAfter: number) =>
  new AppError('rate_limited', 429, `Too many requests. Try again in ${retryAfter} seconds.`, { headers: { 'Retry-After': String(retryAfter) } });

/**
 * Checks the current password, sets the new one and revokes every other session of the user (the
 * current one stays); mails the passwordChanged notice; audit `auth.password.changed`.
 */
export async function changePassword(
  app: AppContext,
  input: { userId: string; sessionId: string; currentPassword: string; newPassword: string; meta: RequestMeta },
): Promise<{ revokedSessions: number }> {
  const { userId, meta } = input;
  checkNewPassword(app, input.newPassword, 'new_password');
  const user = await app.db('users').where({ id: userId }).first('id', 'email', 'password_hash');
  if (!user) throw new AppError('unauthenticated', 401, 'Sign in to use this operation.');
  if (user.password_hash === null) {
    throw new AppError('password_not_set', 409, 'This account has no password. Set one with a password reset code.');
  }
  const blockedFor = await loginLimitSpent(app, user.email);
  if (blockedFor !== null) throw rateLimited(blockedFor);
  if (!(await verifyPassword(input.currentPassword, user.password_hash))) {
    const limit = { max: app.config.rateLimits.loginPerMinute, windowSeconds: 60 };
    const [counted] = await hitAll(app.redis, app.config.redisPrefix, [{ key: loginEmailLimitKey(user.email), limit }]);
    if (!counted!.allowed) throw rateLimited(counted!.retryAfterSeconds);
    throw new AppError('invalid_credentials', 401, 'The current password is wrong.');
  }
  const newHash = await hashPassword(input.newPassword, app.config.auth.bcryptCost);
  const { run, revokedSessions } = await app.db.transaction(async (trx) => {
    const now = app.now();
    // Only if the password did not change meanwhile (a concurrent change or reset wins).
    const updated = await trx('users').where({ id: userId, password_hash: user.password_hash }).update({ password_hash: newHash, updated_at: now });
    if (updated === 0) throw new AppError('invalid_credentials', 401, 'The current password is wrong.');
    const revoked = await revokeOtherSessions(trx, userId, input.sessionId, now);
    const actor = { kind: 'user' as const, id: userId };
    await recordAudit(trx, { action: 'auth.password.changed', actor, target: { kind: 'user', id: userId }, data: { revoked_sessions: revoked }, meta });
    const queued = await queueMail(trx, app, { to: user.email, ...templates.passwordChanged({ at: now.toISOString() }) }, { actor, meta });
    return { run: queued, revokedSessions: revoked };
  });
  await app.jobs.handOver([run]);
  return { revokedSessions };
}

// ----- forgot ----------------------------------------------------------------------------------

/**
 * How long the known-address path takes beyond the shared work (the transaction and the
 * hand-over): the median of the recent ones (robust to a cold start or a stall). The
 * unknown-address path waits about as long, so the answer time does not tell whether an account
 * exists.
 */
const knownPathSamples: number[] = [];
const remember = (ms: number) => {
  knownPathSamples.push(ms);
  if (knownPathSamples.length > 31) knownPathSamples.shift();
};
const typicalKnownPathMs = () => {
  if (!knownPathSamples.length) return 15;
  const sorted = [...knownPathSamples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/**
 * Always succeeds the same way (no account enumeration). Both paths: the per-address rate limit
 * (counted for every address), the user lookup, a code and its HMAC; a known address then gets
 * the code in a transaction with the mail and `auth.password.reset_requested`, an unknown one
 * waits about as long.
 */
export async function requestPasswordReset(app: AppContext, rawEmail: string, meta: RequestMeta): Promise<{ codeExpiresIn: number }> {
  const email = normaliseEmail(rawEmail);
  await enforce(app.redis, app.config.redisPrefix, [{ key: forgotLimitKey(email), limit: emailLimit(app) }]);
  const user = await findUserByEmail(app.db, email);
  const started = performance.now();
  if (user) {
    const { run } = await app.db.transaction(async (trx) => {
      const { code } = await issueCode(trx, app.config.sessionSecret, user.id, 'password_reset', app.now());
      const actor = { kind: 'user' as const, id: null };
      const queued = await queueMail(trx, app, { to: user.email, ...templates.passwordReset({ code, minutes: CODE_MINUTES }) }, { actor, meta });
      await recordAudit(trx, { action: 'auth.password.reset_requested', actor, target: { kind: 'user', id: user.id }, data: { job_run_id: queued.id }, meta });
      return { run: queued };
    });
    await app.jobs.handOver([run]);
    remember(performance.now() - started);
  } else {
    // The same CPU work as issuing (a code and its HMAC), against a row that never exists …
    await consumeCode(app.db, app.config.sessionSecret, `usr_unknown:${email}`, 'password_reset', String(randomInt(0, 1_000_000)).padStart(6, '0'), app.now());
    // … then about as long as the known path's transaction and hand-over take.
    const left = typicalKnownPathMs() * (0.9 + Math.random() * 0.2) - (performance.now() - started);
    if (left > 0) await new Promise((r) => setTimeout(r, left));
  }
  return { codeExpiresIn: CODE_TTL_MS / 1000 };
}

// ----- reset -----------------------------------------------------------------------------------

/**
 * Sets a new password with a reset code: every session revoked, none created, the email becomes
 * verified (the code proves the mailbox), a notice mailed, `auth.password.reset`. Wrong, expired,
 * used or replaced codes and unknown addresses all answer 401 `invalid_code`; a wrong try is
 * counted (the fifth kills the code) and `auth.password.reset_failed` written, both committed
 * before the error is thrown.
 */
export async function resetPassword(
  app: AppContext,
  input: { email: string; code: string; newPassword: string; meta: RequestMeta },
): Promise<{ revokedSessions: number }> {
  const { meta } = input;
  checkNewPassword(app, input.newPassword, 'new_password');
  const email = normaliseEmail(input.email);
  const user = await findUserByEmail(app.db, email);
  const secret = app.config.sessionSecret;
  if (!user) {
    // Same shape as a wrong code: one code lookup and HMAC; no account, no audit.
    await consumeCode(app.db, secret, `usr_unknown:${email}`, 'password_reset', input.code, app.now());
    throw invalidCode();
  }
  const outcome = await app.db.transaction(async (trx) => {
    const now = app.now();
    const target = { kind: 'user', id: user.id };
    if (!(await consumeCode(trx, secret, user.id, 'password_reset', input.code, now))) {
      await recordAudit(trx, { action: 'auth.password.reset_failed', actor: { kind: 'user', id: null }, target, meta });
      return null;
    }
    // Hashed while the code row is locked, so the code is used exactly when the password is set.
    const hash = await hashPassword(input.newPassword, app.config.auth.bcryptCost);
    await trx('users')
      .where({ id: user.id })
      .update({ password_hash: hash, updated_at: now, email_verified_at: trx.raw('coalesce(email_verified_at, ?)', [now]) });
    const revoked = await revokeOtherSessions(trx, user.id, null, now);
    const actor = { kind: 'user' as const, id: user.id };
    await recordAudit(trx, { action: 'auth.password.reset', actor, target, data: { revoked_sessions: revoked }, meta });
    const run = await queueMail(trx, app, { to: user.email, ...templates.passwordChanged({ at: now.toISOString() }) }, { actor, meta });
    return { run, revoked };
  });
  if (!outcome) throw invalidCode();
  await app.jobs.handOver([outcome.run]);
  return { revokedSessions: outcome.revoked };
}
