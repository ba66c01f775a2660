// The users table: the only file with SQL for accounts.
import type { Knex } from 'knex';
import { newId } from '../ids';
import { prepared, runPrepared } from '../platform/prepared';

type Db = Knex | Knex.Transaction;

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function insertUser(db: Db, input: { email: string; name?: string | null; passwordHash?: string | null }): Promise<string> {
  const id = newId('usr');
  await db('users').insert({
    id,
    email: normaliseEmail(input.email),
    name: input.name ?? null,
    password_hash: input.passwordHash ?? null,
  });
  return id;
}

/** Grants the platform role `operator`; false when no account has that email. */
export async function grantOperator(db: Db, email: string): Promise<boolean> {
  const updated = await db('users').where({ email: normaliseEmail(email) }).update({ is_operator: true, updated_at: db.fn.now() });
  return updated > 0;
}

/** Makes operators of the accounts listed in OPERATOR_EMAILS (applied at every start). */
export async function grantOperatorsByEmail(db: Db, emails: string[]): Promise<number> {
  if (!emails.length) return 0;
  return db('users').whereIn('email', emails.map(normaliseEmail)).where({ is_operator: false }).update({ is_operator: true, updated_at: db.fn.now() });
}

/** What sign-in needs from a users row (the password hash never leaves src/accounts). */
export interface UserRow {
  id: string;
  email: string;
  name: string | null;
  emailVerified: boolean;
  operator: boolean;
  passwordHash: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const USER_COLUMNS = ['id', 'email', 'name', 'email_verified_at', 'is_operator', 'password_hash', 'created_at', 'updated_at'];

function toUserRow(r: any): UserRow {
  return {
    id: r.id,
    email: r.email,
    name: r.name,
    emailVerified: r.email_verified_at !== null,
    operator: r.is_operator,
    passwordHash: r.password_hash,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export async function findUserById(db: Db, id: string): Promise<UserRow | null> {
  const row = await db('users').where({ id }).first(USER_COLUMNS);
  return row ? toUserRow(row) : null;
}

/** The account with this email (compared normalised: trimmed, lower case), or null. */
export async function findUserByEmail(db: Db, email: string): Promise<UserRow | null> {
  const [row] = await runPrepared(db, FIND_USER_BY_EMAIL, [normaliseEmail(email)]);
  return row ? toUserRow(row) : null;
}

// Every sign-in starts here: a prepared statement (no query building, planned once per connection).
const FIND_USER_BY_EMAIL = prepared('users.find_by_email', `select ${USER_COLUMNS.join(', ')} from users where email = $1`);

/**
 * Creates a password account; null when the (normalised) email already has one. Uses the unique
 * index, so two concurrent registrations of one address cannot both succeed.
 */
export async function createPasswordUser(
  db: Db,
  input: { email: string; name: string | null; passwordHash: string; now: Date },
): Promise<UserRow | null> {
  const rows = await db('users')
    .insert({
      id: newId('usr'),
      email: normaliseEmail(input.email),
      name: input.name,
      password_hash: input.passwordHash,
      created_at: input.now,
      updated_at: input.now,
    })
    .onConflict('email')
    .ignore()
    .returning(USER_COLUMNS);
  return rows[0] ? toUserRow(rows[0]) : null;
}

/**
 * Replaces the password hash only if it is still `oldHash` (a concurrent change wins). `changedAt`
 * marks a change of password (a rehash at sign-in is not one).
 */
export async function replacePasswordHash(db: Db, userId: string, oldHash: string, newHash: string, changedAt?: Date): Promise<boolean> {
  const n = await db('users')
    .where({ id: userId, password_hash: oldHash })
    .update({ password_hash: newHash, ...(changedAt ? { updated_at: changedAt } : {}) });
  return n > 0;
}

/** Locks the user's row for the rest of the transaction; null when it is gone. */
export async function lockUser(db: Db, id: string): Promise<{ id: string; email: string; emailVerified: boolean } | null> {
  const row = await db('users').where({ id }).forUpdate().first('id', 'email', 'email_verified_at');
  return row ? { id: row.id, email: row.email, emailVerified: row.email_verified_at !== null } : null;
}

export async function markEmailVerified(db: Db, id: string, now: Date): Promise<void> {
  await db('users').where({ id }).update({ email_verified_at: now, updated_at: now });
}

/** A password set with a reset code: the code proves the mailbox, so the email becomes verified too. */
export async function setPasswordFromReset(db: Db, id: string, passwordHash: string, now: Date): Promise<void> {
  await db('users')
    .where({ id })
    .update({ password_hash: passwordHash, updated_at: now, email_verified_at: db.raw('coalesce(email_verified_at, ?)', [now]) });
}

export async function deleteUser(db: Db, id: string): Promise<void> {
  await db('users').where({ id }).delete();
}
