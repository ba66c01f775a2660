import knex, { type Knex } from 'knex';
import pg from 'pg';
import { migrationSource } from '../../db/migrations';
import type { DatabasePooler } from '../config';
import type { Logger } from '../logger';
import { parseTimestamptz } from './timestamps';

// Timestamps come back as Date objects (timestamptz, read by position: timestamps.ts); bigint counts
// as numbers (they stay far below 2^53).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, parseTimestamptz);

export type Db = Knex;

export interface DatabaseTimeouts {
  /** Opening a connection, or waiting for a free one in the pool. */
  connectMs: number;
  /** One statement, measured by the client: a server that stopped answering fails here. */
  queryMs?: number;
  /** The server's statement_timeout (below `queryMs`: a slow statement is cancelled, its connection kept). */
  statementMs?: number;
}

/**
 * A connection string, or a function that finds it when the first connection opens (the
 * application role's, whose password is read from the database: database-roles.ts). Until the
 * function succeeds, each new connection asks it again.
 */
export type DatabaseTarget = string | (() => Promise<string>);

/** The target's connection string (for tools that take one: the benchmarks' bare baselines). */
export const connectionString = (target: DatabaseTarget): Promise<string> => (typeof target === 'string' ? Promise.resolve(target) : target());

/**
 * A pool whose every wait is bounded (see DatabaseTimeouts): no request hangs on a database that
 * stopped answering. The owner's pool (migrations) passes only `connectMs`.
 *
 * `pooler`: `transaction` when the connections go through a transaction pooler, which refuses a
 * statement_timeout startup parameter and may give each transaction another server connection:
 * then none is sent (the role's default bounds statements on the server) and runPrepared sends no
 * named statements (see usesTransactionPooler).
 */
export function createDatabase(target: DatabaseTarget, poolMax: number, logger?: Logger, timeouts: DatabaseTimeouts = { connectMs: 3_000 }, pooler: DatabasePooler = 'session'): Db {
  const log = (level: 'warn' | 'error' | 'debug') => (message: unknown) => logger?.[level]('knex', { message: String(message) });
  const settings = (connectionString: string) => ({
    connectionString,
    application_name: 'tenant-api',
    connectionTimeoutMillis: timeouts.connectMs,
    ...(timeouts.queryMs ? { query_timeout: timeouts.queryMs } : {}),
    ...(timeouts.statementMs && pooler === 'session' ? { statement_timeout: timeouts.statementMs } : {}),
  });
  const db = knex({
    log: { warn: log('warn'), error: log('error'), debug: log('debug'), deprecate: log('warn') },
    client: 'pg',
    connection: typeof target === 'string' ? settings(target) : async () => settings(await target()),
    // knex puts the failed statement before the driver's message ("BEGIN; - Query read timeout"):
    // its text only, never the values bound to it, so no email or hash reaches a log line and no
    // value can pose as a driver's message (dependencies.ts reads what follows " - ").
    compileSqlOnError: false,
    pool: {
      // min 0: a pool that never holds a dead connection when the database restarts.
      min: 0,
      max: poolMax,
      idleTimeoutMillis: 30_000,
      // After a query_timeout the connection still waits for the server's answer (node-postgres
      // keeps the query active): it is not ready for another query, so the pool drops it.
      validate: (connection: PooledConnection) => connection.readyForQuery === true && !connection._ending,
    },
    acquireConnectionTimeout: timeouts.connectMs,
    [POOLER]: pooler,
  } as Knex.Config);
  // Such a connection is closed as soon as it comes back, not at the next acquire: meanwhile it
  // would keep its place in a pooler's queue, and a BEGIN the client gave up on (no server
  // connection to give) would still run once one frees, leaving it inside a transaction that
  // holds that server connection and that the next request would run in. Likewise one released
  // inside a transaction, however it came to be.
  (db.client.pool as { on(event: 'release', listener: (connection: PooledConnection) => void): void }).on('release', (connection) => {
    if (connection.readyForQuery !== true || (connection.getTransactionStatus?.() ?? 'I') !== 'I') void connection.end?.().catch(() => undefined);
  });
  return db;
}

interface PooledConnection {
  readyForQuery?: boolean;
  _ending?: boolean;
  /** node-postgres: the last ReadyForQuery's status, 'I' idle, 'T' in a transaction, 'E' in a failed one. */
  getTransactionStatus?(): string | null;
  end?(): Promise<void>;
}

const POOLER = 'tenantApiPooler';

/**
 * Whether `db` (a pool, or a transaction of one) goes through a transaction pooler: its statements
 * must not rely on anything living longer than one transaction on the server connection.
 */
export function usesTransactionPooler(db: Db): boolean {
  return (db.client.config as Record<string, unknown>)[POOLER] === 'transaction';
}

export async function migrateLatest(db: Db, logger?: Logger): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource })) as [number, string[]];
  if (applied.length) logger?.info('database migrations applied', { count: applied.length, migrations: applied });
  return applied;
}

/** Whether the database has the table (in `public`): a migrated database, or an unrelated one. */
export async function hasTable(db: Db, name: string): Promise<boolean> {
  const { rows } = await db.raw<{ rows: { found: boolean }[] }>('select to_regclass(?) is not null as found', [`public.${name}`]);
  return rows[0]!.found;
}

/** Whether `err` is PostgreSQL's unique violation (23505) of the named constraint or index. */
export function isUniqueViolation(err: unknown, constraint: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e.code === '23505' && e.constraint === constraint;
}

/** Round trip to the database; resolves with the latency in ms. */
export async function pingDatabase(db: Db): Promise<number> {
  const start = performance.now();
  await db.raw('select 1');
  return performance.now() - start;
}
