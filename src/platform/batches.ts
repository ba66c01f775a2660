// Retention deletes in batches: one statement removes at most `batch` rows (short locks, bounded
// WAL per statement), repeated until a statement removes fewer.
import type { Knex } from 'knex';
import type { Db } from './database';

/**
 * Deletes the rows of `table` that `filter` selects, `batch` at a time, picked by `key` (`id`, or
 * `ctid` for a table whose key has several columns); how many.
 */
export async function deleteInBatches(db: Db, table: string, filter: (q: Knex.QueryBuilder) => void, batch: number, key: 'id' | 'ctid' = 'id'): Promise<number> {
  let total = 0;
  for (;;) {
    const keys = db(table).select(key).limit(batch);
    filter(keys);
    const n = await db(table).whereIn(key, keys).delete();
    total += n;
    if (n < batch) return total;
  }
}
