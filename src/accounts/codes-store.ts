// one_time_codes: the only file with SQL for one-time codes.
import { deleteInBatches } from '../platform/batches';
import type { Db } from '../platform/database';

export type CodePurpose = 'verify_email' | 'password_reset';


export interface LiveCode {
  id: number;
  codeHash: Buffer;
  failedAttempts: number;
}

/** Kills the user's unused codes of this purpose and stores a new one. */
export async function replaceCode(db: Db, input: { userId: string; purpose: CodePurpose; codeHash: Buffer; now: Date; expiresAt: Date }): Promise<void> {
  await db('one_time_codes').where({ user_id: input.userId, purpose: input.purpose }).whereNull('used_at').update({ used_at: input.now });
  await db('one_time_codes').insert({ user_id: input.userId, purpose: input.purpose, code_hash: input.codeHash, created_at: input.now, expires_at: input.expiresAt });
}

/** The user's live code of this purpose (unused, unexpired, tries left), locked for the check. */
export async function lockLiveCode(db: Db, userId: string, purpose: CodePurpose, now: Date, maxFailures: number): Promise<LiveCode | null> {
  const row = await db('one_time_codes')
    .where({ user_id: userId, purpose })
    .whereNull('used_at')
    .where('expires_at', '>', now)
    .where('failed_attempts', '<', maxFailures)
    .orderBy('id', 'desc')
    .forUpdate()
    .first('id', 'code_hash', 'failed_attempts');
  return row ? { id: Number(row.id), codeHash: row.code_hash, failedAttempts: row.failed_attempts } : null;
}

export async function countFailure(db: Db, id: number): Promise<void> {
  await db('one_time_codes').where({ id }).increment('failed_attempts', 1);
}

/** Uses the code up; false when it was used meanwhile (a concurrent request won). */
export async function useCode(db: Db, id: number, now: Date): Promise<boolean> {
  return (await db('one_time_codes').where({ id }).whereNull('used_at').update({ used_at: now })) > 0;
}

/** Deletes codes that expired before `before` (used ones included: they expire too). */
export async function deleteExpiredCodes(db: Db, before: Date, batch: number): Promise<number> {
  return deleteInBatches(db, 'one_time_codes', (q) => q.where('expires_at', '<', before), batch);
}
