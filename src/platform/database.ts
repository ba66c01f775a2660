import knex, { type Knex } from 'knex';
import pg from 'pg';
import { migrationSource } from '../../db/migrations';
import type { Logger } from '../logger';

// Timestamps come back as Date objects (timestamptz); bigint counts as numbers (they stay far below 2^53).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Knex;

export function createDatabase(url: string, poolMax: number, logger?: Logger): Db {
  const log = (level: 'warn' | 'error' | 'debug') => (message: unknown) => logger?.[level]('knex', { message: String(message) });
  return knex({
    log: { warn: log('warn'), error: log('error'), debug: log('debug'), deprecate: log('warn') },
    client: 'pg',
    connection: { connectionString: url, connectionTimeoutMillis: 3_000, application_name: 'tenant-api' },
    // min 0: a pool that never holds a dead connection when the database restarts.
    pool: { min: 0, max: poolMax, idleTimeoutMillis: 30_000 },
    acquireConnectionTimeout: 5_000,
  });
}

export async function migrateLatest(db: Db, logger?: Logger): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource })) as [number, string[]];
  if (applied.length) logger?.info('database migrations applied', { count: applied.length, migrations: applied });
  return applied;
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
