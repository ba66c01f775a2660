// Test databases on the real PostgreSQL: one migrated template per run, cloned per test file.
import knex from 'knex';

export const adminUrl = () => process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrl(name: string): string {
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

export function adminDb() {
  return knex({ client: 'pg', connection: adminUrl(), pool: { min: 0, max: 1 } });
}
