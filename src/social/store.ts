// The social sign-in tables (identities, states, nonces, notifications): the only file with their SQL.
import { newId } from '../ids';
import type { Provider } from '../config/social-providers';
import type { Db } from '../platform/database';


export interface IdentityRow {
  id: string;
  userId: string;
  provider: Provider;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  emailForwarding: boolean;
  createdAt: Date;
  lastUsedAt: Date;
}

/** An identities row. */
interface IdentityRecord {
  id: string;
  user_id: string;
  provider: Provider;
  subject: string;
  email: string | null;
  email_verified: boolean;
  email_forwarding: boolean;
  created_at: Date;
  last_used_at: Date;
}

const toIdentity = (r: IdentityRecord): IdentityRow => ({
  id: r.id,
  userId: r.user_id,
  provider: r.provider,
  subject: r.subject,
  email: r.email,
  emailVerified: r.email_verified,
  emailForwarding: r.email_forwarding,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
});

export async function findIdentity(db: Db, provider: Provider, subject: string): Promise<IdentityRow | null> {
  const row = await db('identities').where({ provider, subject }).first();
  return row ? toIdentity(row) : null;
}

/** The identity with this id if it is the user's (another user's is as good as unknown). */
export async function findOwnIdentity(db: Db, userId: string, id: string): Promise<IdentityRow | null> {
  const row = await db('identities').where({ id, user_id: userId }).first();
  return row ? toIdentity(row) : null;
}

export async function findUserIdentity(db: Db, userId: string, provider: Provider): Promise<IdentityRow | null> {
  const row = await db('identities').where({ user_id: userId, provider }).first();
  return row ? toIdentity(row) : null;
}

/** Null when the subject is already linked, or the user already has an identity of that provider. */
export async function insertIdentity(
  db: Db,
  input: { userId: string; provider: Provider; subject: string; email: string; emailVerified: boolean; now: Date },
): Promise<IdentityRow | null> {
  const rows = await db('identities')
    .insert({
      id: newId('idn'),
      user_id: input.userId,
      provider: input.provider,
      subject: input.subject,
      email: input.email,
      email_verified: input.emailVerified,
      created_at: input.now,
      last_used_at: input.now,
    })
    .onConflict()
    .ignore()
    .returning('*');
  return rows[0] ? toIdentity(rows[0]) : null;
}

/** A sign-in with the identity: what the provider says now, and when. */
export async function touchIdentity(db: Db, id: string, input: { email: string; emailVerified: boolean; now: Date }): Promise<void> {
  await db('identities').where({ id }).update({ email: input.email, email_verified: input.emailVerified, last_used_at: input.now });
}

export async function listIdentities(db: Db, userId: string, limit: number, beforeId?: string): Promise<IdentityRow[]> {
  const q = db('identities').where({ user_id: userId }).orderBy('id', 'desc').limit(limit);
  if (beforeId) q.where('id', '<', beforeId);
  return (await q).map(toIdentity);
}

export async function deleteIdentity(db: Db, id: string): Promise<boolean> {
  return (await db('identities').where({ id }).delete()) > 0;
}

export async function setEmailForwarding(db: Db, id: string, on: boolean): Promise<void> {
  await db('identities').where({ id }).update({ email_forwarding: on });
}

// States and nonces: single use, consumed by one conditional update (two racing requests cannot
// both get the row).

export interface StateRow {
  bindingHash: Buffer;
  provider: Provider;
  intent: 'login' | 'link';
  userId: string | null;
  redirectTo: string;
}

export async function insertState(
  db: Db,
  input: { stateHash: Buffer; bindingHash: Buffer; provider: Provider; intent: string; userId: string | null; redirectTo: string; now: Date; expiresAt: Date },
): Promise<void> {
  await db('social_states').insert({
    state_hash: input.stateHash,
    binding_hash: input.bindingHash,
    provider: input.provider,
    intent: input.intent,
    user_id: input.userId,
    redirect_to: input.redirectTo,
    created_at: input.now,
    expires_at: input.expiresAt,
  });
}

/** Marks a live state used and returns it; null when unknown, expired, used or of another provider. */
export async function consumeState(db: Db, stateHash: Buffer, provider: Provider, now: Date): Promise<StateRow | null> {
  const [row] = await db('social_states')
    .where({ state_hash: stateHash, provider })
    .whereNull('used_at')
    .where('expires_at', '>', now)
    .update({ used_at: now })
    .returning(['binding_hash', 'provider', 'intent', 'user_id', 'redirect_to']);
  return row ? { bindingHash: row.binding_hash, provider: row.provider, intent: row.intent, userId: row.user_id, redirectTo: row.redirect_to } : null;
}

export async function insertNonce(db: Db, input: { nonceHash: Buffer; provider: Provider; now: Date; expiresAt: Date }): Promise<void> {
  await db('social_nonces').insert({ nonce_hash: input.nonceHash, provider: input.provider, created_at: input.now, expires_at: input.expiresAt });
}

export async function consumeNonce(db: Db, nonceHash: Buffer, provider: Provider, now: Date): Promise<boolean> {
  const n = await db('social_nonces').where({ nonce_hash: nonceHash, provider }).whereNull('used_at').where('expires_at', '>', now).update({ used_at: now });
  return n > 0;
}

/** False when this notification (provider and `jti`) was handled before. */
export async function recordNotification(db: Db, provider: Provider, jti: string, now: Date): Promise<boolean> {
  const rows = await db('social_notifications').insert({ provider, jti, received_at: now }).onConflict(['provider', 'jti']).ignore().returning('jti');
  return rows.length > 0;
}

/** Retention: states and nonces that expired, and notification ids received, before `before`. */
export async function deleteExpired(db: Db, before: Date, batch: number): Promise<number> {
  let total = 0;
  for (const [table, column] of [
    ['social_states', 'expires_at'],
    ['social_nonces', 'expires_at'],
    ['social_notifications', 'received_at'],
  ] as const) {
    for (;;) {
      const n = await db(table)
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- knex's types take only column names in whereIn; a Raw (ctid: these tables have no id) works at run time
        .whereIn(db.raw('ctid') as any, db(table).select(db.raw('ctid')).where(column, '<', before).limit(batch))
        .delete();
      total += n;
      if (n < batch) break;
    }
  }
  return total;
}
