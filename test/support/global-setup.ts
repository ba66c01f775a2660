import { randomBytes } from 'node:crypto';
import { adminDb, databaseUrl } from './databases';
import { createDatabase, migrateLatest } from '../../src/platform/database';
import { provisionAppRole } from '../../src/platform/database-roles';
import { loadConfig } from '../../src/config';

export default async function globalSetup(): Promise<void> {
  const runId = `t${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const template = `${runId}_template`;
  const admin = adminDb();
  try {
    await admin.raw(`create database "${template}"`);
  } finally {
    await admin.destroy();
  }
  const db = createDatabase(databaseUrl(template), 1);
  try {
    await migrateLatest(db);
    // The role requests run as (row-level security applies to it) and its grants, cloned with the template.
    await provisionAppRole(db, loadConfig({ NODE_ENV: 'test' }));
  } finally {
    await db.destroy();
  }
  process.env.TEST_RUN_ID = runId;
  process.env.TEST_TEMPLATE_DB = template;
}
