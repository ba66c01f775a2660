// Test databases on the real PostgreSQL: one migrated template per run, cloned per test file.
import { randomBytes } from 'node:crypto';
import knex from 'knex';
import { loadConfig, type Config } from '../../src/config';
import { createDatabase, migrateLatest } from '../../src/platform/database';
import { provisionAppRole } from '../../src/platform/database-roles';

export const adminUrl = () => process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrl(name: string): string {
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

export function adminDb() {
  return knex({ client: 'pg', connection: adminUrl(), pool: { min: 0, max: 1 } });
}

async function asAdmin(sql: string): Promise<void> {
  const admin = adminDb();
  try {
    await admin.raw(sql);
  } finally {
    await admin.destroy();
  }
}

/** A fresh database cloned from this run's migrated template; returns its name. */
export async function cloneTemplateDatabase(): Promise<string> {
  const name = `${process.env.TEST_RUN_ID}_${randomBytes(4).toString('hex')}`;
  await asAdmin(`create database "${name}" template "${process.env.TEST_TEMPLATE_DB}"`);
  return name;
}

/** As the service does at start: the migrations, then the application role and its grants. */
export async function migrateAndGrant(url: string): Promise<void> {
  const owner = createDatabase(url, 1);
  try {
    await migrateLatest(owner);
    await provisionAppRole(owner, loadConfig({ NODE_ENV: 'test', DATABASE_URL: url }));
  } finally {
    await owner.destroy();
  }
}

/** As the service does at start for the role requests use: its grants (and, when managed, the role itself). */
export async function grantAppRole(config: Config): Promise<void> {
  const owner = createDatabase(config.databaseUrl!, 1);
  try {
    await provisionAppRole(owner, config);
  } finally {
    await owner.destroy();
  }
}

export const dropDatabase = (name: string) => asAdmin(`drop database if exists "${name}" with (force)`);
