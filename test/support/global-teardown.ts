import { adminDb } from './databases';

export default async function globalTeardown(): Promise<void> {
  const runId = process.env.TEST_RUN_ID;
  if (!runId) return;
  const admin = adminDb();
  try {
    const { rows } = await admin.raw<{ rows: { datname: string }[] }>('select datname from pg_database where datname like ?', [`${runId}_%`]);
    for (const { datname } of rows) await admin.raw(`drop database if exists "${datname}" with (force)`);
  } finally {
    await admin.destroy();
  }
  await (globalThis as { stopSuitePooler?: () => Promise<void> }).stopSuitePooler?.();
}
