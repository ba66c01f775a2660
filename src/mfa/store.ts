// Second factors' tables: totp_credentials, recovery_codes. The only file with SQL for them
// (sign-in challenges: src/sessions/challenges-store.ts; passkeys and WebAuthn ceremonies:
// src/passkeys/store.ts).
import type { Db } from '../platform/database';


export interface MfaState {
  totp: boolean;
  passkeys: number;
  recoveryCodesRemaining: number;
}

/**
 * A user's second factors in one statement (the passkey count is read here too, so sign-in and
 * step-up decide with one round trip). The session lookup reads the same figures with the session
 * (src/sessions/store.ts), so GET /v1/auth/me needs no query of its own.
 */
export async function mfaState(db: Db, userId: string): Promise<MfaState> {
  const { rows } = await db.raw(
    `select exists (select 1 from totp_credentials where user_id = :id and enabled_at is not null) as totp,
            (select count(*) from passkeys where user_id = :id)::int as passkeys,
            (select count(*) from recovery_codes where user_id = :id and used_at is null)::int as remaining`,
    { id: userId },
  );
  return { totp: rows[0].totp, passkeys: rows[0].passkeys, recoveryCodesRemaining: rows[0].remaining };
}

// ---- totp_credentials ----

export interface TotpRow {
  secretCiphertext: Buffer;
  enabled: boolean;
  pendingExpiresAt: Date | null;
  failedAttempts: number;
  lastUsedStep: number;
}

/** A totp_credentials row (bigint last_used_step arrives as a number: see platform/database.ts). */
interface TotpRecord {
  secret_ciphertext: Buffer;
  enabled_at: Date | null;
  pending_expires_at: Date | null;
  failed_attempts: number;
  last_used_step: number;
}

function toTotpRow(r: TotpRecord): TotpRow {
  return {
    secretCiphertext: r.secret_ciphertext,
    enabled: r.enabled_at !== null,
    pendingExpiresAt: r.pending_expires_at,
    failedAttempts: r.failed_attempts,
    lastUsedStep: Number(r.last_used_step),
  };
}

export async function findTotp(db: Db, userId: string, opts: { lock?: boolean } = {}): Promise<TotpRow | null> {
  const q = db('totp_credentials').where({ user_id: userId });
  if (opts.lock) q.forUpdate();
  const row = await q.first();
  return row ? toTotpRow(row) : null;
}

/** Stores a pending secret, replacing a pending one; false (nothing written) when TOTP is on. */
export async function savePendingTotp(db: Db, input: { userId: string; secretCiphertext: Buffer; now: Date; expiresAt: Date }): Promise<boolean> {
  const { rows } = await db.raw(
    `insert into totp_credentials (user_id, secret_ciphertext, pending_expires_at, created_at)
     values (:userId, :secret, :expiresAt, :now)
     on conflict (user_id) do update
        set secret_ciphertext = excluded.secret_ciphertext, pending_expires_at = excluded.pending_expires_at,
            failed_attempts = 0, last_used_step = 0, created_at = excluded.created_at
      where totp_credentials.enabled_at is null
     returning user_id`,
    { userId: input.userId, secret: input.secretCiphertext, expiresAt: input.expiresAt, now: input.now },
  );
  return rows.length > 0;
}

/** Counts a wrong code against a pending setup; the failures so far. */
export async function countPendingTotpFailure(db: Db, userId: string): Promise<number> {
  const [row] = await db('totp_credentials').where({ user_id: userId }).whereNull('enabled_at').increment('failed_attempts', 1).returning('failed_attempts');
  return row?.failed_attempts ?? 0;
}

export async function enableTotp(db: Db, userId: string, step: number, now: Date): Promise<void> {
  await db('totp_credentials').where({ user_id: userId }).update({ enabled_at: now, pending_expires_at: null, failed_attempts: 0, last_used_step: step });
}

/**
 * Records `step` as used if it is newer than every step used before: the compare-and-set that
 * makes a code single use, even for two requests racing with the same code.
 */
export async function useTotpStep(db: Db, userId: string, step: number): Promise<boolean> {
  const n = await db('totp_credentials').where({ user_id: userId }).whereNotNull('enabled_at').where('last_used_step', '<', step).update({ last_used_step: step });
  return n > 0;
}

/** Deletes the user's TOTP secret (on or pending); whether one was on. */
export async function deleteTotp(db: Db, userId: string): Promise<boolean> {
  const rows = await db('totp_credentials').where({ user_id: userId }).delete().returning('enabled_at');
  return rows.some((r: { enabled_at: Date | null }) => r.enabled_at !== null);
}

// ---- recovery_codes ----

/** Replaces the user's recovery codes with a new set (the old ones stop working at once). */
export async function replaceRecoveryCodes(db: Db, userId: string, hashes: Buffer[], now: Date): Promise<void> {
  await db('recovery_codes').where({ user_id: userId }).delete();
  await db('recovery_codes').insert(hashes.map((code_hash) => ({ user_id: userId, code_hash, created_at: now })));
}

/** Spends one unused code; false when it is not one (or was spent meanwhile). */
/** Spends the unused code whose HMAC is one of `hashes` (one per accepted key; at most one matches). */
export async function useRecoveryCode(db: Db, userId: string, hashes: Buffer[], now: Date): Promise<boolean> {
  const n = await db('recovery_codes').where({ user_id: userId }).whereIn('code_hash', hashes).whereNull('used_at').update({ used_at: now });
  return n > 0;
}

export async function deleteRecoveryCodes(db: Db, userId: string): Promise<void> {
  await db('recovery_codes').where({ user_id: userId }).delete();
}
