// idempotency_keys: the only file with SQL for it. The two statements a keyed request adds run as
// named prepared statements (src/platform/prepared.ts), like the other statements of hot paths.
import type { Db } from '../platform/database';
import { prepared, runPrepared } from '../platform/prepared';
import { deleteInBatches } from '../platform/batches';

/** An answer as it was sent: status, the headers the operation set, the exact body bytes (null: none). */
export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer | null;
}

export interface StoredKey extends StoredAnswer {
  fingerprint: Buffer;
}

/** The row's columns as StoredKey names them (claim's row also has `locked`, left out). */
const toStoredKey = (r: StoredKey): StoredKey => ({ fingerprint: r.fingerprint, status: r.status, headers: r.headers, body: r.body });

// One round trip: the transaction-scoped lock of this user's key (false when another transaction
// holds it) and its live row. The lock's key is a 64-bit hash of the pair: two pairs sharing one
// would only make one of them wait for the other (a 409), never mix their answers.
const CLAIM = prepared(
  'idempotency.claim',
  `select pg_try_advisory_xact_lock(hashtextextended($1::text || ' ' || $2::text, 0)) as locked, k.fingerprint, k.status, k.headers, k.body
   from (select 1) as one
   left join idempotency_keys k on k.user_id = $1 and k.key = $2 and k.expires_at > $3`,
);

/**
 * Takes the key's lock for the rest of the transaction (must run inside one: it ends with it) and
 * reads its answer if one is recorded and not expired.
 */
export async function claim(db: Db, userId: string, key: string, now: Date): Promise<{ locked: boolean; stored: StoredKey | null }> {
  const [row] = await runPrepared<StoredKey & { locked: boolean }>(db, CLAIM, [userId, key, now]);
  return { locked: row!.locked, stored: row!.fingerprint ? toStoredKey(row!) : null };
}

// A live row of the same key wins (nothing written, no row returned); an expired one that
// retention has not deleted yet is replaced.
const RECORD = prepared(
  'idempotency.record',
  `insert into idempotency_keys (user_id, key, fingerprint, status, headers, body, created_at, expires_at)
   values ($1, $2, $3, $4, $5, $6, $7, $8)
   on conflict (user_id, key) do update
     set fingerprint = excluded.fingerprint, status = excluded.status, headers = excluded.headers, body = excluded.body,
         created_at = excluded.created_at, expires_at = excluded.expires_at
     where idempotency_keys.expires_at <= excluded.created_at
   returning 1 as recorded`,
);

/** Records the answer; false when a live answer of the same key is there already. */
export async function record(db: Db, row: { userId: string; key: string; fingerprint: Buffer; answer: StoredAnswer; now: Date; expiresAt: Date }): Promise<boolean> {
  const { answer } = row;
  const rows = await runPrepared(db, RECORD, [row.userId, row.key, row.fingerprint, answer.status, JSON.stringify(answer.headers), answer.body, row.now, row.expiresAt]);
  return rows.length === 1;
}

/** The live row of a key, read without its lock. */
export async function find(db: Db, userId: string, key: string, now: Date): Promise<StoredKey | null> {
  const row = await db('idempotency_keys').where({ user_id: userId, key }).where('expires_at', '>', now).first<StoredKey | undefined>('fingerprint', 'status', 'headers', 'body');
  return row ? toStoredKey(row) : null;
}

/** Deletes the rows expired at `now`, `batch` at a time (short statements); how many. */
export function deleteExpired(db: Db, now: Date, batch: number): Promise<number> {
  return deleteInBatches(db, 'idempotency_keys', (q) => q.where('expires_at', '<=', now), batch, 'ctid');
}
