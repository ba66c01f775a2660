// Hot statements (a request's session lookup, the job workers' batched writes) as named prepared
// statements on knex's own connections: no query building per call, and Postgres parses and plans
// each statement once per connection instead of on every execution (not behind a transaction
// pooler: there they are sent unnamed, see runPrepared). Inside a transaction the
// statement runs on the transaction's connection (knex's transaction client hands out only that).
import type { Knex } from 'knex';
import type { QueryResultRow } from 'pg';
import { usesTransactionPooler, type Db } from './database';

/** A statement with a fixed text (placeholders $1…$n) and a name unique in the process. */
export interface Prepared {
  name: string;
  text: string;
}

export function prepared(name: string, text: string): Prepared {
  return { name, text };
}

interface PgConnection {
  query<R extends QueryResultRow>(config: { name?: string; text: string; values: unknown[] }): Promise<{ rows: R[] }>;
}

export function runPrepared<R extends QueryResultRow>(db: Db, statement: Prepared, values: unknown[]): Promise<R[]> {
  // Behind a transaction pooler the next statement may meet another server connection, where
  // this name is unknown or another client's: unnamed, parsed on each execution.
  return run<R>(db, usesTransactionPooler(db) ? { text: statement.text, values } : { name: statement.name, text: statement.text, values }, statement.name);
}

/**
 * A statement built for this call (placeholders $1…$n), sent as it is: for a hot read whose text
 * depends on its filters, where knex's raw query (bindings rewritten, a query object and events
 * per call) cost a tenth of the request. `label` names it in errors.
 */
export function runStatement<R extends QueryResultRow>(db: Db, text: string, values: unknown[], label: string): Promise<R[]> {
  return run<R>(db, { text, values }, label);
}

async function run<R extends QueryResultRow>(db: Db, query: { name?: string; text: string; values: unknown[] }, label: string): Promise<R[]> {
  // As knex refuses a query on a finished transaction: one whose BEGIN failed (timed out, say)
  // still runs its callback, and this statement would go to the connection outside any transaction.
  if (db.isTransaction && (db as Knex.Transaction).isCompleted()) throw new Error(`Transaction query already complete (${label})`);
  const connection = (await db.client.acquireConnection()) as PgConnection;
  try {
    return (await connection.query<R>(query)).rows;
  } catch (err) {
    // What knex emits for its own queries (src/platform/metric-sources.ts counts them).
    db.client.emit('query-error', err, { sql: query.text });
    throw err;
  } finally {
    await db.client.releaseConnection(connection);
  }
}
