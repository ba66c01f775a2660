import { randomBytes } from 'node:crypto';
import { adminDb, databaseUrl, migrateAndGrant } from './databases';
import { pooledSuite, startSuitePooler } from './pgbouncer';

export default async function globalSetup(): Promise<void> {
  const runId = `t${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const template = `${runId}_template`;
  const admin = adminDb();
  try {
    await admin.raw(`create database "${template}"`);
  } finally {
    await admin.destroy();
  }
  // With the role requests run as (row-level security applies to it) and its grants, cloned with the template.
  await migrateAndGrant(databaseUrl(template));
  process.env.TEST_RUN_ID = runId;
  process.env.TEST_TEMPLATE_DB = template;
  // Read by global teardown (the same process): stops PgBouncer and drops its role.
  if (pooledSuite()) (globalThis as { stopSuitePooler?: () => Promise<void> }).stopSuitePooler = await startSuitePooler();
}
