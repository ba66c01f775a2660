// The users table: the only file with SQL for accounts.
import type { Db } from '../platform/database';
import { newId } from '../ids';

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
