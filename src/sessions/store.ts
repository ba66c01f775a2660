// The sessions table: the only file with SQL for sessions.
import type { Db } from '../platform/database';
import { newId } from '../ids';
import { hashToken, looksLikeToken, newSessionToken } from './tokens';

export interface Caller {
  sessionId: string;
  userId: string;
  operator: boolean;
  transport: 'cookie' | 'bearer';
}

export interface SessionPolicy {
  idleTimeoutSeconds: number;
  absoluteLifetimeSeconds: number;
}

/**
 * Resolves a token to its live session in one round trip. No cache: a revoked or expired
 * session is refused on its very next request, on every instance.
 */
export async function findLiveSession(db: Db, token: string, policy: SessionPolicy, now = new Date()): Promise<Caller | null> {
  if (!looksLikeToken(token)) return null;
  const row = await db('sessions as s')
    .join('users as u', 'u.id', 's.user_id')
    .where('s.token_hash', hashToken(token))
    .whereNull('s.revoked_at')
    .where('s.expires_at', '>', now)
    .where('s.last_seen_at', '>', new Date(now.getTime() - policy.idleTimeoutSeconds * 1000))
    .first('s.id', 's.user_id', 's.transport', 'u.is_operator');
  if (!row) return null;
  return { sessionId: row.id, userId: row.user_id, operator: row.is_operator, transport: row.transport };
}

export interface NewSession {
  id: string;
  token: string;
  expiresAt: Date;
}

export async function createSession(
  db: Db,
  input: { userId: string; transport: 'cookie' | 'bearer'; ip?: string | null; userAgent?: string | null },
  policy: SessionPolicy,
  now = new Date(),
): Promise<NewSession> {
  const token = newSessionToken();
  const id = newId('ses');
  const expiresAt = new Date(now.getTime() + policy.absoluteLifetimeSeconds * 1000);
  await db('sessions').insert({
    id,
    user_id: input.userId,
    token_hash: hashToken(token),
    transport: input.transport,
    created_at: now,
    last_seen_at: now,
    expires_at: expiresAt,
    ip: input.ip ?? null,
    user_agent: input.userAgent?.slice(0, 512) ?? null,
  });
  return { id, token, expiresAt };
}
