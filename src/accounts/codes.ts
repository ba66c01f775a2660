// One-time 6-digit codes (email verification, password reset): 15 minutes, 5 wrong tries and the
// code is dead, stored only as an HMAC, compared in constant time. A new code replaces the old one.
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';

export type CodePurpose = 'verify_email' | 'password_reset';

export const CODE_TTL_MS = 15 * 60 * 1000;
export const CODE_MAX_FAILURES = 5;

function digest(secret: string, userId: string, purpose: CodePurpose, code: string): Buffer {
  return createHmac('sha256', secret).update(`${purpose}:${userId}:${code}`).digest();
}

/** Issues a new code (killing earlier unused ones of the same purpose); returns the plain code to mail. */
export async function issueCode(trx: Knex | Knex.Transaction, secret: string, userId: string, purpose: CodePurpose, now: Date) {
  const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
  await trx('one_time_codes').where({ user_id: userId, purpose }).whereNull('used_at').update({ used_at: now });
  const expiresAt = new Date(now.getTime() + CODE_TTL_MS);
  await trx('one_time_codes').insert({ user_id: userId, purpose, code_hash: digest(secret, userId, purpose, code), created_at: now, expires_at: expiresAt });
  return { code, expiresAt };
}

/**
 * Checks a code against the user's live one. Right: it is used up. Wrong: one failure counted;
 * the fifth kills it. Returns false for wrong, expired, used or missing codes alike.
 */
export async function consumeCode(trx: Knex | Knex.Transaction, secret: string, userId: string, purpose: CodePurpose, code: string, now: Date): Promise<boolean> {
  const row = await trx('one_time_codes')
    .where({ user_id: userId, purpose })
    .whereNull('used_at')
    .where('expires_at', '>', now)
    .where('failed_attempts', '<', CODE_MAX_FAILURES)
    .orderBy('id', 'desc')
    .forUpdate()
    .first();
  const candidate = digest(secret, userId, purpose, code);
  if (row && timingSafeEqual(candidate, row.code_hash)) {
    await trx('one_time_codes').where({ id: row.id }).update({ used_at: now });
    return true;
  }
  if (row) await trx('one_time_codes').where({ id: row.id }).update({ failed_attempts: row.failed_attempts + 1 });
  return false;
}
