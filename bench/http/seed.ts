// The one user the HTTP benchmarks sign in as: a scratch database, migrated, with a user whose
// password is hashed at `bcryptCost`, and a bearer session for it.
import type { Scratch } from '../scratch';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createDatabase, migrateLatest } from '../../src/platform/database';
import { insertUser } from '../../src/accounts/store';
import { hashPassword } from '../../src/accounts/passwords';
import { createSession } from '../../src/sessions/store';

export interface BenchUser {
  dbUrl: string;
  email: string;
  /** The bearer token of a session of the user. */
  token: string;
}

export async function seedBenchUser(scratch: Scratch, password: string, bcryptCost: number): Promise<BenchUser> {
  const dbUrl = await scratch.createDatabase();
  const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: dbUrl });
  const db = createDatabase(dbUrl, 2, createLogger('warn'));
  const email = `bench-${scratch.id}@example.com`;
  try {
    await migrateLatest(db);
    const userId = await insertUser(db, { email, name: 'Bench User', passwordHash: await hashPassword(password, bcryptCost) });
    const token = (await createSession(db, { userId, transport: 'bearer' }, config.session)).token;
    return { dbUrl, email, token };
  } finally {
    await db.destroy();
  }
}
