// What the retention job did last, per policy.
import type { Knex } from 'knex';

export interface RetentionRunRow {
  policy: string;
  last_run_at: Date;
  last_deleted: number;
  keep: string;
}

export async function recordRun(db: Knex | Knex.Transaction, row: RetentionRunRow): Promise<void> {
  await db('retention_runs').insert(row).onConflict('policy').merge();
}

export async function readRuns(db: Knex | Knex.Transaction): Promise<RetentionRunRow[]> {
  return db('retention_runs').select('*');
}
