// The mfa_challenges table: sign-ins whose first factor passed, waiting for the second. The only
// file with SQL for it.
import { deleteInBatches } from '../platform/batches';
import type { Db } from '../platform/database';

export interface ChallengeRow {
  id: string;
  userId: string;
  firstFactor: string;
  transport: 'cookie' | 'bearer';
  /** The social identity of the first factor, carried to the session. */
  identityId: string | null;
  failedAttempts: number;
  expiresAt: Date;
}

/** An mfa_challenges row (identity_id: added by the social sign-in migration). */
interface ChallengeRecord {
  id: string;
  user_id: string;
  first_factor: string;
  transport: 'cookie' | 'bearer';
  identity_id: string | null;
  failed_attempts: number;
  expires_at: Date;
}

function toChallengeRow(r: ChallengeRecord): ChallengeRow {
  return { id: r.id, userId: r.user_id, firstFactor: r.first_factor, transport: r.transport, identityId: r.identity_id, failedAttempts: r.failed_attempts, expiresAt: r.expires_at };
}

export async function insertChallenge(
  db: Db,
  input: { id: string; tokenHash: Buffer; userId: string; firstFactor: string; transport: string; identityId: string | null; now: Date; expiresAt: Date },
): Promise<void> {
  await db('mfa_challenges').insert({
    identity_id: input.identityId,
    id: input.id,
    token_hash: input.tokenHash,
    user_id: input.userId,
    first_factor: input.firstFactor,
    transport: input.transport,
    created_at: input.now,
    expires_at: input.expiresAt,
  });
}

/** The live challenge of a token (not ended, not expired, tries left); locked when asked. */
export async function findLiveChallenge(db: Db, tokenHash: Buffer, now: Date, maxFailures: number, opts: { lock?: boolean } = {}): Promise<ChallengeRow | null> {
  const q = db('mfa_challenges').where({ token_hash: tokenHash }).whereNull('ended_at').where('expires_at', '>', now).where('failed_attempts', '<', maxFailures);
  if (opts.lock) q.forUpdate();
  const row = await q.first();
  return row ? toChallengeRow(row) : null;
}

/** Ends every open sign-in challenge of the user (the account was disabled); how many. */
export async function endUserChallenges(db: Db, userId: string, now: Date): Promise<number> {
  return db('mfa_challenges').where({ user_id: userId }).whereNull('ended_at').update({ ended_at: now });
}

/** Counts a wrong factor; the challenge ends with the `maxFailures`th. The failures so far. */
export async function countChallengeFailure(db: Db, id: string, maxFailures: number, now: Date): Promise<number> {
  const { rows } = await db.raw(
    `update mfa_challenges
        set failed_attempts = failed_attempts + 1,
            ended_at = case when failed_attempts + 1 >= :max then :now::timestamptz else ended_at end
      where id = :id
     returning failed_attempts`,
    { id, max: maxFailures, now },
  );
  return rows[0]?.failed_attempts ?? maxFailures;
}

export async function endChallenge(db: Db, id: string, now: Date): Promise<void> {
  await db('mfa_challenges').where({ id }).update({ ended_at: now });
}

/** Retention: challenges that expired before `before`. */
export function deleteExpiredChallenges(db: Db, before: Date, batch: number): Promise<number> {
  return deleteInBatches(db, 'mfa_challenges', (q) => q.where('expires_at', '<', before), batch);
}
