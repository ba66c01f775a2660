// The users table: the only file with SQL for accounts.
import { newId } from '../ids';
import { prepared, runPrepared } from '../platform/prepared';
import type { Db } from '../platform/database';
import { SECOND_FACTOR_COLUMNS, secondFactorsOf, type MfaSummary, type SecondFactorColumns } from '../sessions/second-factors';


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

/** What deciding an operator grant needs: the row, locked for the rest of the transaction; null when no account has the email. */
export async function lockOperatorCandidate(db: Db, email: string): Promise<{ id: string; verified: boolean; disabled: boolean; operator: boolean } | null> {
  const row = await db('users').where({ email: normaliseEmail(email) }).forUpdate().first('id', 'email_verified_at', 'disabled_at', 'is_operator');
  return row ? { id: row.id, verified: row.email_verified_at !== null, disabled: row.disabled_at !== null, operator: row.is_operator } : null;
}

export async function setOperator(db: Db, id: string, operator: boolean, now: Date): Promise<void> {
  await db('users').where({ id }).update({ is_operator: operator, updated_at: now });
}

/**
 * Makes operators of the accounts with these emails that are verified, enabled and not operators
 * yet (OPERATOR_EMAILS); `userId` narrows it to one account. The ids of the accounts granted.
 */
export async function grantVerifiedOperators(db: Db, emails: string[], now: Date, userId?: string): Promise<string[]> {
  if (!emails.length) return [];
  const query = db('users')
    .whereIn('email', emails.map(normaliseEmail))
    .where({ is_operator: false })
    .whereNotNull('email_verified_at')
    .whereNull('disabled_at');
  if (userId) query.where({ id: userId });
  const rows: { id: string }[] = await query.update({ is_operator: true, updated_at: now }).returning('id');
  return rows.map((r) => r.id);
}

/** Operators whose email is not verified (granted before grants asked for it, or by hand): their ids. */
export async function unverifiedOperators(db: Db): Promise<string[]> {
  const rows: { id: string }[] = await db('users').where({ is_operator: true }).whereNull('email_verified_at').select('id');
  return rows.map((r) => r.id);
}

/** What sign-in needs from a users row (the password hash never leaves src/accounts). */
export interface UserRow {
  id: string;
  email: string;
  name: string | null;
  emailVerified: boolean;
  operator: boolean;
  /** An operator disabled the account: no way of signing in works. */
  disabled: boolean;
  passwordHash: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const USER_COLUMNS = ['id', 'email', 'name', 'email_verified_at', 'is_operator', 'disabled_at', 'password_hash', 'created_at', 'updated_at'];

/** A users row as USER_COLUMNS selects it. */
type UserRecord = {
  id: string;
  email: string;
  name: string | null;
  email_verified_at: Date | null;
  is_operator: boolean;
  disabled_at: Date | null;
  password_hash: string | null;
  created_at: Date;
  updated_at: Date;
};

function toUserRow(r: UserRecord): UserRow {
  return {
    id: r.id,
    email: r.email,
    name: r.name,
    emailVerified: r.email_verified_at !== null,
    operator: r.is_operator,
    disabled: r.disabled_at !== null,
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
  const [row] = await runPrepared<UserRecord>(db, FIND_USER_BY_EMAIL, [normaliseEmail(email)]);
  return row ? toUserRow(row) : null;
}

// Social sign-in and password resets start here: a prepared statement (no query building,
// planned once per connection).
const FIND_USER_BY_EMAIL = prepared('users.find_by_email', `select ${USER_COLUMNS.join(', ')} from users where email = $1`);

// A password sign-in reads the second factors with the user: whether it ends in a session or a
// challenge is known without a round trip of its own.
export const FIND_USER_FOR_SIGN_IN = prepared('users.find_for_sign_in', `select ${USER_COLUMNS.join(', ')}, ${SECOND_FACTOR_COLUMNS} from users u where email = $1`);

/** findUserByEmail, with the user's second factors. */
export async function findUserForSignIn(db: Db, email: string): Promise<{ user: UserRow; secondFactors: MfaSummary } | null> {
  const [row] = await runPrepared<UserRecord & SecondFactorColumns>(db, FIND_USER_FOR_SIGN_IN, [normaliseEmail(email)]);
  return row ? { user: toUserRow(row), secondFactors: secondFactorsOf(row) } : null;
}

/**
 * Creates an account: with a password (registration), or without one and with the email verified
 * when the provider says so (social sign-up). Null when the (normalised) email already has an
 * account: the unique index decides, so two concurrent sign-ups of one address cannot both succeed.
 */
export async function createUser(
  db: Db,
  input: { email: string; name: string | null; passwordHash?: string | null; emailVerified?: boolean; now: Date },
): Promise<UserRow | null> {
  const rows = await db('users')
    .insert({
      id: newId('usr'),
      email: normaliseEmail(input.email),
      name: input.name,
      password_hash: input.passwordHash ?? null,
      email_verified_at: input.emailVerified ? input.now : null,
      created_at: input.now,
      updated_at: input.now,
    })
    .onConflict('email')
    .ignore()
    .returning(USER_COLUMNS);
  return rows[0] ? toUserRow(rows[0]) : null;
}

/** Disables or enables an account by email; the user's id, or null when no account has it. */
export async function setDisabled(db: Db, email: string, disabled: boolean, now: Date): Promise<string | null> {
  const [row] = await db('users')
    .where({ email: normaliseEmail(email) })
    .update({ disabled_at: disabled ? db.raw('coalesce(disabled_at, ?)', [now]) : null, updated_at: now })
    .returning('id');
  return row?.id ?? null;
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

/** The ways the user can sign in. */
export interface SignInMethods {
  password: boolean;
  passkeys: number;
  identities: number;
}

/**
 * Locks the user's row and counts the ways they can sign in, so two concurrent removals (a passkey
 * and an identity, say) cannot together remove the last one. Null when the user is gone.
 */
export async function lockSignInMethods(db: Db, userId: string): Promise<SignInMethods | null> {
  const row = await db('users')
    .where({ id: userId })
    .forUpdate()
    .first(
      db.raw('password_hash is not null as password'),
      db.raw('(select count(*) from passkeys p where p.user_id = users.id)::int as passkeys'),
      db.raw('(select count(*) from identities i where i.user_id = users.id)::int as identities'),
    );
  return row ? { password: row.password, passkeys: row.passkeys, identities: row.identities } : null;
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
