// What the retention job did last, per policy.
import type { Db } from '../platform/database';

export interface RetentionRunRow {
  policy: string;
  last_run_at: Date;
  last_deleted: number;
  keep: string;
}

export async function recordRun(db: Db, row: RetentionRunRow): Promise<void> {
  await db('retention_runs').insert(row).onConflict('policy').merge();
}

export async function readRuns(db: Db): Promise<RetentionRunRow[]> {
  return db('retention_runs').select('*');
}
