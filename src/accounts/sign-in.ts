// Register, sign in (password), sign out: the domain side of /v1/auth/{register,login,logout,
// logout-all} and /v1/auth/sessions. Every change and its audit event share one transaction;
// mail is queued in that transaction too and handed to the job system after the commit.
import type { AppContext } from '../app-context';
import { recordAudit, type Actor, type RequestMeta } from '../audit/store';
import { AppError } from '../http/problem';
import { templates } from '../mail/templates';
import { queueMail } from '../mail/outbox';
import { enforce, type Limit } from '../ratelimit/limiter';
import { ipBucket } from '../ratelimit/ip-ceiling';
import { createSession, listLiveSessions, revokeOtherSessions, revokeSession, type Caller, type NewSession, type SessionRow } from '../sessions/store';
import { CODE_TTL_MS, issueCode } from './codes';
import { accountView, type AccountView } from './me';
import { dummyHash, hashPassword, isCommonPassword, needsRehash, verifyPassword } from './passwords';
import { createPasswordUser, findUserByEmail, normaliseEmail, replacePasswordHash } from './store';

export type Transport = 'cookie' | 'bearer';

/** A completed sign-in: what the HTTP edge turns into the LoginSuccess body (and the cookie). */
export interface IssuedSession {
  user: AccountView;
  session: NewSession;
  transport: Transport;
}

const perMinute = (max: number): Limit => ({ max, windowSeconds: 60 });

const userActor = (id: string | null): Actor => ({ kind: 'user', id });

function invalidCredentials(): AppError {
  return new AppError('invalid_credentials', 401, 'The email or password is wrong.');
}

/**
 * The password rules of registration (and, later, password change and reset): the contract's
 * schema already enforces 8–128 characters; the configured minimum may be stricter, and the
 * 10,000 most common passwords are refused. Errors name `body.<field>`.
 */
export function checkNewPassword(app: AppContext, password: string, field = 'password'): void {
  const min = app.config.auth.passwordMinLength;
  if ([...password].length < min) {
    throw new AppError('validation_failed', 422, 'The request does not match the contract.', {
      errors: [{ message: `must NOT have fewer than ${min} characters`, location: `body.${field}` }],
    });
  }
  if (isCommonPassword(password)) {
    throw new AppError('password_too_common', 422, 'This password is too common. Choose another one.', {
      errors: [{ message: 'is among the most common passwords', location: `body.${field}` }],
    });
  }
}

/**
 * POST /v1/auth/register: creates the account (email unverified), mails a verification code and
 * signs the new account in — all in one transaction, with `auth.registered` and
 * `auth.login.succeeded`. 429 over 5 a minute per IP; 403 while registration is closed; 409
 * `email_taken`.
 */
export async function register(
  app: AppContext,
  input: { email: string; password: string; name?: string | null; transport?: Transport },
  meta: RequestMeta & { ip: string },
): Promise<IssuedSession> {
  await enforce(app.redis, app.config.redisPrefix, [{ key: `register:ip:${ipBucket(meta.ip)}`, limit: perMinute(app.config.rateLimits.registerPerMinute) }]);
  if (!app.config.auth.registrationEnabled) throw new AppError('registration_closed', 403, 'Registration is closed.');
  checkNewPassword(app, input.password);

  const transport = input.transport ?? 'cookie';
  const email = normaliseEmail(input.email);
  // bcrypt (async, off the event loop) before the transaction: no connection held while hashing.
  const passwordHash = await hashPassword(input.password, app.config.auth.bcryptCost);
  const now = app.now();

  const { issued, mailRun } = await app.db.transaction(async (trx) => {
    const user = await createPasswordUser(trx, { email, name: input.name ?? null, passwordHash, now });
    if (!user) throw new AppError('email_taken', 409, 'An account with this email already exists.');
    const by = { actor: userActor(user.id), meta };
    const { code } = await issueCode(trx, app.config.sessionSecret, user.id, 'verify_email', now);
    const mailRun = await queueMail(trx, app, { to: email, ...templates.verifyEmail({ code, minutes: CODE_TTL_MS / 60_000 }) }, by);
    const session = await createSession(trx, { userId: user.id, transport, ip: meta.ip, userAgent: meta.userAgent }, app.config.session, now);
    await recordAudit(trx, { action: 'auth.registered', actor: by.actor, target: { kind: 'user', id: user.id }, data: { method: 'password' }, meta });
    await recordAudit(trx, {
      action: 'auth.login.succeeded',
      actor: by.actor,
      target: { kind: 'session', id: session.id },
      data: { method: 'password', transport, via: 'register' },
      meta,
    });
    return { issued: { user: accountView(user), session, transport }, mailRun };
  });
  await app.jobs.handOver([mailRun]);
  return issued;
}

/**
 * POST /v1/auth/login with email and password. Unknown email, wrong password and an account
 * without a password all cost exactly one bcrypt compare (against `dummyHash` when there is no
 * hash) and answer the same 401 `invalid_credentials`. A hash made with another cost than the
 * configured one is replaced on success. 429 over 10 a minute per IP or per email.
 */
export async function login(
  app: AppContext,
  input: { email: string; password: string; transport?: Transport },
  meta: RequestMeta & { ip: string },
): Promise<IssuedSession> {
  const email = normaliseEmail(input.email);
  const limit = perMinute(app.config.rateLimits.loginPerMinute);
  await enforce(app.redis, app.config.redisPrefix, [
    { key: `login:ip:${ipBucket(meta.ip)}`, limit },
    { key: `login:email:${email}`, limit },
  ]);

  const cost = app.config.auth.bcryptCost;
  const user = await findUserByEmail(app.db, email);
  const hash = user?.passwordHash ?? (await dummyHash(cost));
  const matches = await verifyPassword(input.password, hash);

  if (!user || !user.passwordHash || !matches) {
    await recordAudit(app.db, {
      action: 'auth.login.failed',
      actor: userActor(user?.id ?? null),
      target: user ? { kind: 'user', id: user.id } : null,
      data: { reason: 'invalid_credentials', method: 'password' },
      meta,
    });
    throw invalidCredentials();
  }

  // Second factors (TOTP, passkeys) arrive with the second-factor issue: until then no user has
  // one and sign-in always completes here (200). That issue answers 202 with a challenge instead.
  const transport = input.transport ?? 'cookie';
  const rehashed = needsRehash(user.passwordHash, cost) ? await hashPassword(input.password, cost) : null;
  const now = app.now();
  const session = await app.db.transaction(async (trx) => {
    if (rehashed) await replacePasswordHash(trx, user.id, user.passwordHash!, rehashed);
    const created = await createSession(trx, { userId: user.id, transport, ip: meta.ip, userAgent: meta.userAgent }, app.config.session, now);
    await recordAudit(trx, {
      action: 'auth.login.succeeded',
      actor: userActor(user.id),
      target: { kind: 'session', id: created.id },
      data: { method: 'password', transport },
      meta,
    });
    return created;
  });
  return { user: accountView(user), session, transport };
}

/** POST /v1/auth/logout: revokes the caller's own session (`auth.logout`). */
export async function logout(app: AppContext, caller: Caller, meta: RequestMeta): Promise<void> {
  await app.db.transaction(async (trx) => {
    await revokeSession(trx, caller.userId, caller.sessionId, app.config.session, app.now());
    await recordAudit(trx, { action: 'auth.logout', actor: userActor(caller.userId), target: { kind: 'session', id: caller.sessionId }, meta });
  });
}

/** POST /v1/auth/logout-all: revokes every other session of the caller; returns how many (`auth.logout_all`). */
export async function logoutOthers(app: AppContext, caller: Caller, meta: RequestMeta): Promise<number> {
  return app.db.transaction(async (trx) => {
    const revoked = await revokeOtherSessions(trx, caller.userId, caller.sessionId, app.now());
    await recordAudit(trx, {
      action: 'auth.logout_all',
      actor: userActor(caller.userId),
      target: { kind: 'user', id: caller.userId },
      data: { revoked, kept: caller.sessionId },
      meta,
    });
    return revoked;
  });
}

/**
 * DELETE /v1/auth/sessions/{id}: revokes one of the caller's live sessions (`auth.session.revoked`).
 * 404 for another user's session, an unknown id, or one already revoked or expired.
 * Returns whether it was the caller's own (then the edge clears the cookie, as logout does).
 */
export async function revokeOwnSession(app: AppContext, caller: Caller, sessionId: string, meta: RequestMeta): Promise<{ current: boolean }> {
  const current = sessionId === caller.sessionId;
  await app.db.transaction(async (trx) => {
    const revoked = await revokeSession(trx, caller.userId, sessionId, app.config.session, app.now());
    if (!revoked) throw new AppError('not_found', 404, 'No such session.');
    await recordAudit(trx, {
      action: 'auth.session.revoked',
      actor: userActor(caller.userId),
      target: { kind: 'session', id: sessionId },
      data: { current },
      meta,
    });
  });
  return { current };
}

/** GET /v1/auth/sessions: the caller's live sessions, newest first; `beforeId` pages. */
export async function listOwnSessions(app: AppContext, caller: Caller, limit: number, beforeId?: string): Promise<(SessionRow & { current: boolean })[]> {
  const rows = await listLiveSessions(app.db, caller.userId, app.config.session, app.now(), limit, beforeId);
  return rows.map((r) => ({ ...r, current: r.id === caller.sessionId }));
}
