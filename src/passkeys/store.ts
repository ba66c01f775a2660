// passkeys and webauthn_ceremonies (and the users' WebAuthn handle): the only file with SQL for them.
import { randomBytes } from 'node:crypto';
import { deleteInBatches } from '../platform/batches';
import type { Db } from '../platform/database';


export interface PasskeyRow {
  id: string;
  userId: string;
  credentialId: string;
  publicKey: Buffer;
  signCount: number;
  transports: string[];
  deviceType: string;
  backedUp: boolean;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** A passkeys row (bigint sign_count arrives as a number: see platform/database.ts). */
interface PasskeyRecord {
  id: string;
  user_id: string;
  credential_id: string;
  public_key: Buffer;
  sign_count: number;
  transports: string[] | null;
  device_type: string;
  backed_up: boolean;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
}

function toPasskeyRow(r: PasskeyRecord): PasskeyRow {
  return {
    id: r.id,
    userId: r.user_id,
    credentialId: r.credential_id,
    publicKey: r.public_key,
    signCount: Number(r.sign_count),
    transports: r.transports ?? [],
    deviceType: r.device_type,
    backedUp: r.backed_up,
    name: r.name,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
  };
}

/** The user's passkeys, newest first; `beforeId` pages (ids are time-sortable). */
export async function listPasskeys(db: Db, userId: string, limit: number, beforeId?: string): Promise<PasskeyRow[]> {
  const q = db('passkeys').where({ user_id: userId }).orderBy('id', 'desc').limit(limit);
  if (beforeId) q.where('id', '<', beforeId);
  return (await q).map(toPasskeyRow);
}

export async function countPasskeys(db: Db, userId: string): Promise<number> {
  const [row] = await db('passkeys').where({ user_id: userId }).count<{ n: string }[]>({ n: '*' });
  return Number(row!.n);
}

export async function findPasskeyByCredentialId(db: Db, credentialId: string): Promise<PasskeyRow | null> {
  const row = await db('passkeys').where({ credential_id: credentialId }).first();
  return row ? toPasskeyRow(row) : null;
}

export async function findOwnPasskey(db: Db, userId: string, id: string): Promise<PasskeyRow | null> {
  const row = await db('passkeys').where({ id, user_id: userId }).first();
  return row ? toPasskeyRow(row) : null;
}

/** Stores a new passkey; null when its credential id is registered already (to anyone). */
export async function insertPasskey(
  db: Db,
  p: Omit<PasskeyRow, 'lastUsedAt' | 'signCount'> & { signCount: number; aaguid: string },
): Promise<PasskeyRow | null> {
  const rows = await db('passkeys')
    .insert({
      id: p.id,
      user_id: p.userId,
      credential_id: p.credentialId,
      public_key: p.publicKey,
      sign_count: p.signCount,
      transports: p.transports,
      device_type: p.deviceType,
      backed_up: p.backedUp,
      aaguid: p.aaguid,
      name: p.name,
      created_at: p.createdAt,
    })
    .onConflict('credential_id')
    .ignore()
    .returning('*');
  return rows[0] ? toPasskeyRow(rows[0]) : null;
}

/**
 * After a verified assertion: the new signature counter, backup state and last use. Only if the
 * counter is still the one the assertion was checked against, so a concurrent use cannot move
 * it backwards; false when it moved meanwhile.
 */
export async function recordPasskeyUse(db: Db, id: string, seen: { oldCount: number; newCount: number; backedUp: boolean; now: Date }): Promise<boolean> {
  const n = await db('passkeys')
    .where({ id, sign_count: seen.oldCount })
    .update({ sign_count: seen.newCount, backed_up: seen.backedUp, last_used_at: seen.now });
  return n > 0;
}

export async function renamePasskey(db: Db, userId: string, id: string, name: string): Promise<PasskeyRow | null> {
  const rows = await db('passkeys').where({ id, user_id: userId }).update({ name }).returning('*');
  return rows[0] ? toPasskeyRow(rows[0]) : null;
}

export async function deletePasskey(db: Db, userId: string, id: string): Promise<boolean> {
  return (await db('passkeys').where({ id, user_id: userId }).delete()) > 0;
}

// ---- the owner: a users row ----

/**
 * Locks the passkeys' owner for the rest of the transaction (adding and removing passkeys of one
 * user are serialised); whether the account has a password. Null when the account is gone.
 */
export async function lockOwner(db: Db, userId: string): Promise<{ hasPassword: boolean } | null> {
  const row = await db('users').where({ id: userId }).forUpdate().first(db.raw('password_hash is not null as has_password'));
  return row ? { hasPassword: row.has_password } : null;
}

// ---- the WebAuthn user handle (a column of users) ----

/** The user's WebAuthn handle, made (16 random bytes) on first use. */
export async function ensureUserHandle(db: Db, userId: string): Promise<Buffer> {
  const { rows } = await db.raw(
    `update users set webauthn_user_handle = coalesce(webauthn_user_handle, :handle) where id = :id returning webauthn_user_handle`,
    { id: userId, handle: randomBytes(16) },
  );
  return rows[0].webauthn_user_handle;
}

export async function userHandleOf(db: Db, userId: string): Promise<Buffer | null> {
  const row = await db('users').where({ id: userId }).first('webauthn_user_handle');
  return row?.webauthn_user_handle ?? null;
}

// ---- webauthn_ceremonies ----

export type CeremonyPurpose = 'registration' | 'login' | 'verification' | 'mfa';

export interface CeremonyRow {
  purpose: CeremonyPurpose;
  userId: string | null;
  mfaChallengeId: string | null;
  challenge: string;
  name: string | null;
}

export async function insertCeremony(
  db: Db,
  c: CeremonyRow & { tokenHash: Buffer; now: Date; expiresAt: Date },
): Promise<void> {
  await db('webauthn_ceremonies').insert({
    token_hash: c.tokenHash,
    purpose: c.purpose,
    user_id: c.userId,
    mfa_challenge_id: c.mfaChallengeId,
    challenge: c.challenge,
    name: c.name,
    created_at: c.now,
    expires_at: c.expiresAt,
  });
}

/** Ends the live ceremonies of a sign-in challenge (a new passkey ceremony replaces the previous one). */
export async function endChallengeCeremonies(db: Db, mfaChallengeId: string, now: Date): Promise<void> {
  await db('webauthn_ceremonies').where({ mfa_challenge_id: mfaChallengeId }).whereNull('used_at').update({ used_at: now });
}

/**
 * Uses a ceremony up: the live one of this token whose purpose is one of `purposes`, or null.
 * One statement, so a token is used at most once however many requests race with it.
 */
export async function consumeCeremony(db: Db, tokenHash: Buffer, purposes: CeremonyPurpose[], now: Date): Promise<CeremonyRow | null> {
  const rows = await db('webauthn_ceremonies')
    .where({ token_hash: tokenHash })
    .whereIn('purpose', purposes)
    .whereNull('used_at')
    .where('expires_at', '>', now)
    .update({ used_at: now })
    .returning(['purpose', 'user_id', 'mfa_challenge_id', 'challenge', 'name']);
  const r = rows[0];
  return r ? { purpose: r.purpose, userId: r.user_id, mfaChallengeId: r.mfa_challenge_id, challenge: r.challenge, name: r.name } : null;
}

/** Retention: ceremonies that expired before `before`. */
export function deleteExpiredCeremonies(db: Db, before: Date, batch: number): Promise<number> {
  return deleteInBatches(db, 'webauthn_ceremonies', (q) => q.where('expires_at', '<', before), batch);
}
