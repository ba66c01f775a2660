// The sessions table: the only file with SQL for sessions.
import type { Knex } from 'knex';
import type { Db } from '../platform/database';
import { newId } from '../ids';
import { prepared, runPrepared } from '../platform/prepared';
import { auditedChange } from '../audit/service';
import { hashToken, looksLikeToken, newSessionToken } from './tokens';
import { deleteInBatches } from '../platform/batches';
import { sessionEndsAt } from './expiry';
import { SECOND_FACTOR_COLUMNS, secondFactorsOf, type MfaSummary, type SecondFactorColumns } from './second-factors';

export interface SessionUser {
  id: string;
  email: string;
  name: string | null;
  emailVerified: boolean;
  operator: boolean;
  createdAt: Date;
  updatedAt: Date;
  /**
   * The user's second factors, read with the session for the operations that show them (GET
   * /v1/auth/me needs no query of its own), undefined for the others: see shownSecondFactors.
   */
  mfa?: MfaSummary;
}

export interface Caller {
  sessionId: string;
  userId: string;
  operator: boolean;
  transport: 'cookie' | 'bearer';
  /** The signed-in user as of this request (read in the same round trip as the session). */
  user: SessionUser;
  /** When the session ends unless it is used again (expiry.ts), as of this request. */
  expiresAt: Date;
  /**
   * This request moved the session's last use (and so its idle expiry) forward: a cookie whose
   * Max-Age ran to the old expiry is set again (at most once a minute, as the touch).
   */
  extended: boolean;
}

export interface SessionPolicy {
  idleTimeoutSeconds: number;
  absoluteLifetimeSeconds: number;
}

/** `last_seen_at` is written at most this often (DESIGN 2). */
const TOUCH_EVERY_MS = 60_000;

/**
 * The session of a token hash and its user, touching `last_seen_at` (at most once a minute) in the
 * same statement; with `secondFactors`, also the user's second factors (three index probes that
 * only the operations showing them pay for). Its two statements are exported for the benches,
 * whose bare baselines send the same ones.
 */
function findLive(name: string, secondFactors: string) {
  return prepared(
    name,
    `with live as (
     select s.id as session_id, s.transport, s.last_seen_at, s.expires_at, u.id, u.email, u.name, u.email_verified_at, u.is_operator, u.created_at, u.updated_at${secondFactors}
       from sessions s join users u on u.id = s.user_id
      where s.token_hash = $1 and s.revoked_at is null and s.expires_at > $2 and s.last_seen_at > $3
   ), touched as (
     update sessions set last_seen_at = $2 where id = (select session_id from live) and last_seen_at < $4 returning id
   )
   select live.*, exists (select 1 from touched) as touched from live`,
  );
}
export const FIND_LIVE_SESSION = findLive('sessions.find_live', '');
export const FIND_LIVE_SESSION_WITH_SECOND_FACTORS = findLive('sessions.find_live_with_second_factors', `,
            ${SECOND_FACTOR_COLUMNS}`);

/**
 * Resolves a token to its live session and user in ONE round trip, touching `last_seen_at` (at
 * most once a minute) in the same statement. No cache: a revoked or expired session is refused on
 * its very next request, on every instance.
 */
export async function findLiveSession(db: Db, token: string, policy: SessionPolicy, now = new Date(), secondFactors = false): Promise<Caller | null> {
  if (!looksLikeToken(token)) return null;
  const at = now.getTime();
  const statement = secondFactors ? FIND_LIVE_SESSION_WITH_SECOND_FACTORS : FIND_LIVE_SESSION;
  // Instants as ISO strings: pg's own Date encoding (local time with its offset, field by field)
  // allocated more than the rest of the parameters together.
  const instant = (ms: number) => new Date(ms).toISOString();
  const rows = await runPrepared(db, statement, [hashToken(token), instant(at), instant(at - policy.idleTimeoutSeconds * 1000), instant(at - TOUCH_EVERY_MS)]);
  const row = rows[0];
  if (!row) return null;
  const lastSeenAt: Date = row.touched ? now : row.last_seen_at;
  return {
    sessionId: row.session_id,
    userId: row.id,
    operator: row.is_operator,
    transport: row.transport,
    user: {
      id: row.id,
      email: row.email,
      name: row.name,
      emailVerified: row.email_verified_at !== null,
      operator: row.is_operator,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      mfa: secondFactors ? secondFactorsOf(row as SecondFactorColumns) : undefined,
    },
    expiresAt: sessionEndsAt(lastSeenAt, row.expires_at, policy.idleTimeoutSeconds),
    extended: row.touched,
  };
}

export interface NewSession {
  id: string;
  token: string;
  /** Its absolute expiry (SessionService.start answers when it ends if unused: expiry.ts). */
  expiresAt: Date;
}

const SESSION_INSERT = {
  sql: `insert into sessions (id, user_id, token_hash, transport, created_at, last_seen_at, expires_at, ip, user_agent, identity_id)
   values ($1, $2, $3, $4, $5, $5, $6, $7, $8, $9)`,
  params: 9,
};
const INSERT_SESSION = prepared('sessions.insert', SESSION_INSERT.sql);
// A sign-in's only write: the session and its auth.login.succeeded in one statement (AuditService.recordWith).
export const INSERT_SESSION_AUDITED = auditedChange('sessions.insert_audited', SESSION_INSERT);

type SessionInput = { userId: string; transport: 'cookie' | 'bearer'; ip?: string | null; userAgent?: string | null; identityId?: string | null };

/** A new session's token and row: the parameters of its insert (alone or audited). */
export function newSession(input: SessionInput, policy: Pick<SessionPolicy, 'absoluteLifetimeSeconds'>, now: Date): { session: NewSession; values: unknown[] } {
  const token = newSessionToken();
  const id = newId('ses');
  const expiresAt = new Date(now.getTime() + policy.absoluteLifetimeSeconds * 1000);
  const values = [id, input.userId, hashToken(token), input.transport, now, expiresAt, input.ip ?? null, input.userAgent?.slice(0, 512) ?? null, input.identityId ?? null];
  return { session: { id, token, expiresAt }, values };
}

/** A session without an audit event (tests and benches seed them). */
export async function createSession(db: Db | Knex.Transaction, input: SessionInput, policy: Pick<SessionPolicy, 'absoluteLifetimeSeconds'>, now = new Date()): Promise<NewSession> {
  const { session, values } = newSession(input, policy, now);
  await runPrepared(db, INSERT_SESSION, values);
  return session;
}

export interface SessionRow {
  id: string;
  createdAt: Date;
  lastSeenAt: Date;
  /** When it ends unless used again: the earlier of idle and absolute expiry (expiry.ts). */
  expiresAt: Date;
  ip: string | null;
  userAgent: string | null;
}

/** The user's live sessions, newest first; `beforeId` pages (ids are time-sortable). */
export async function listLiveSessions(db: Db, userId: string, policy: SessionPolicy, now: Date, limit: number, beforeId?: string): Promise<SessionRow[]> {
  const q = db('sessions')
    .where({ user_id: userId })
    .whereNull('revoked_at')
    .where('expires_at', '>', now)
    .where('last_seen_at', '>', new Date(now.getTime() - policy.idleTimeoutSeconds * 1000))
    .orderBy('id', 'desc')
    .limit(limit);
  if (beforeId) q.where('id', '<', beforeId);
  const rows = await q;
  type LiveSession = { id: string; created_at: Date; last_seen_at: Date; expires_at: Date; ip: string | null; user_agent: string | null };
  return rows.map((r: LiveSession) => ({
    id: r.id,
    createdAt: r.created_at,
    lastSeenAt: r.last_seen_at,
    expiresAt: sessionEndsAt(r.last_seen_at, r.expires_at, policy.idleTimeoutSeconds),
    ip: r.ip,
    userAgent: r.user_agent,
  }));
}

/** Revokes one live session of the user; false when there is none with that id (or it expired). */
export async function revokeSession(db: Db | Knex.Transaction, userId: string, sessionId: string, policy: SessionPolicy, now: Date): Promise<boolean> {
  const n = await db('sessions')
    .where({ id: sessionId, user_id: userId })
    .whereNull('revoked_at')
    .where('expires_at', '>', now)
    .where('last_seen_at', '>', new Date(now.getTime() - policy.idleTimeoutSeconds * 1000))
    .update({ revoked_at: now });
  return n > 0;
}

/** Revokes every live session of the user except `keepId` (none kept when null); returns how many. */
export async function revokeOtherSessions(db: Db | Knex.Transaction, userId: string, keepId: string | null, now: Date): Promise<number> {
  const q = db('sessions').where({ user_id: userId }).whereNull('revoked_at').where('expires_at', '>', now);
  if (keepId) q.whereNot('id', keepId);
  return q.update({ revoked_at: now });
}

/** Revokes every live session signed in with the identity; how many. */
export async function revokeIdentitySessions(db: Db | Knex.Transaction, identityId: string, now: Date): Promise<number> {
  return db('sessions').where({ identity_id: identityId }).whereNull('revoked_at').where('expires_at', '>', now).update({ revoked_at: now });
}

/**
 * Deletes, `batch` rows a statement, sessions that ended before `before`: past their absolute
 * expiry, revoked, or unused for `idleMs` (the idle timeout in force). Returns how many.
 * `last_seen_at` has no index on purpose: it changes as sessions are used, and an index on it
 * would make every such write update every index of the table; the retention job scans instead.
 */
export async function deleteDeadSessions(db: Db | Knex.Transaction, before: Date, idleMs: number, batch: number): Promise<number> {
  const idleBefore = new Date(before.getTime() - idleMs);
  return deleteInBatches(
    db,
    'sessions',
    (q) => q.where((w) => w.where('expires_at', '<', before).orWhere('revoked_at', '<', before).orWhere('last_seen_at', '<', idleBefore)),
    batch,
  );
}
