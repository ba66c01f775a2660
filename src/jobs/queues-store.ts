// queue_states: the pause flag of each queue as Postgres keeps it (Redis holds the live flag;
// this copy survives Redis being emptied or replaced). The only file with SQL for it.
import type { Db } from '../platform/database';


export async function pausedQueueNames(db: Db): Promise<Set<string>> {
  const rows: { name: string }[] = await db('queue_states').where({ paused: true }).select('name');
  return new Set(rows.map((r) => r.name));
}

/** The stored flag (false when never set), locked until the transaction ends. */
export async function lockQueueState(db: Db, name: string): Promise<boolean> {
  const row = await db('queue_states').where({ name }).forUpdate().first('paused');
  return row?.paused ?? false;
}

export async function writeQueueState(db: Db, name: string, state: { paused: boolean; at: Date; by: string | null }): Promise<void> {
  await db('queue_states').insert({ name, paused: state.paused, updated_at: state.at, updated_by: state.by }).onConflict('name').merge();
}
