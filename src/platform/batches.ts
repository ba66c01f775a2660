// Retention deletes in batches: one statement removes at most `batch` rows (short locks, bounded
// WAL per statement), repeated until a statement removes fewer.
import type { Knex } from 'knex';
import type { Db } from './database';

/** Deletes the rows of `table` that `filter` selects, `batch` at a time (by `id`); how many. */
export async function deleteInBatches(db: Db, table: string, filter: (q: Knex.QueryBuilder) => void, batch: number): Promise<number> {
  let total = 0;
  for (;;) {
    const ids = db(table).select('id').limit(batch);
    filter(ids);
    const n = await db(table).whereIn('id', ids).delete();
    total += n;
    if (n < batch) return total;
  }
}
