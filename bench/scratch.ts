// Scratch resources shared by the benchmarks: a database URL on the bench server, cleanup of the
// Redis keys under a bench prefix, and a whole scratch set (database, Redis prefix, profile
// folder) removed with every child process at the end or on SIGINT/SIGTERM.
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import knex, { type Knex } from 'knex';
import { cpuMs, stopChildren } from './processes';

/** URL of `database` on the bench PostgreSQL (BENCH_DATABASE_URL, default the local trust server). */
export function adminUrl(database: string): string {
  const url = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  url.pathname = `/${database}`;
  return url.toString();
}

/** Deletes the keys under the bench prefix only (SCAN + UNLINK; never FLUSHALL). */
export async function deleteKeys(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}

export interface Scratch {
  /** Random, 8 hex digits: in the names below. */
  id: string;
  /** bench_<name>_<id>, created by createDatabase. */
  database: string;
  /** The Redis key prefix, bench-<name>:<id>:. */
  prefix: string;
  /** REDIS_URL, default redis://127.0.0.1:6379. */
  redisUrl: string;
  /** One connection to the server's `postgres` database. */
  admin: Knex;
  /** A temporary folder (for CPU profiles). */
  profileDir: string;
  /** Creates the scratch database and returns its URL. */
  createDatabase(): Promise<string>;
  /**
   * Starts counting the CPU of the scratch database's PostgreSQL backends; the returned function
   * says how many ms they used since. Backends alive at the end count what they used since the
   * start (all of it for those opened meanwhile); one that closed meanwhile is missed (pools
   * close idle ones after 30 s).
   */
  postgresCpu(): Promise<() => Promise<number>>;
  /**
   * Once, however often called: stops every child process (bench/processes.ts), runs `beforeDrop`,
   * drops the database, deletes the Redis keys under the prefix and the profile folder.
   */
  cleanup(): Promise<void>;
}

/**
 * The scratch set of benchmark `name`, cleaned up (then exit 130) on SIGINT or SIGTERM; call
 * cleanup() when the benchmark ends. `beforeDrop` closes the benchmark's own connections to the
 * database.
 */
export function openScratch(name: string, beforeDrop?: () => Promise<void>): Scratch {
  const id = randomBytes(4).toString('hex');
  const database = `bench_${name}_${id}`;
  const prefix = `bench-${name}:${id}:`;
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const admin: Knex = knex({ client: 'pg', connection: adminUrl('postgres'), pool: { min: 0, max: 1 } });
  let dbCreated = false;
  let cleaned: Promise<void> | null = null;
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), `bench-${name}-prof-`));
  const cleanup = () =>
    (cleaned ??= (async () => {
      await stopChildren();
      if (beforeDrop) await beforeDrop();
      if (dbCreated) await admin.raw(`drop database if exists "${database}" with (force)`);
      await admin.destroy();
      const keys = await deleteKeys(redisUrl, prefix);
      fs.rmSync(profileDir, { recursive: true, force: true });
      console.log(`cleaned up: stopped every child process, dropped ${database}, deleted ${keys} Redis keys under ${prefix}`);
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`${signal}: cleaning up`);
      cleanup().finally(() => process.exit(130));
    });
  }
  const createDatabase = async () => {
    await admin.raw(`create database "${database}"`);
    dbCreated = true;
    return adminUrl(database);
  };
  const backends = async (): Promise<number[]> =>
    (await admin.raw('select pid from pg_stat_activity where datname = ? and pid <> pg_backend_pid()', [database])).rows.map((r: { pid: number }) => r.pid);
  const postgresCpu = async () => {
    const before = new Map((await backends()).map((pid) => [pid, cpuMs(pid)]));
    return async () => {
      let used = 0;
      for (const pid of await backends()) {
        const ms = cpuMs(pid) - (before.get(pid) ?? 0);
        if (Number.isFinite(ms)) used += ms;
      }
      return used;
    };
  };
  return { id, database, prefix, redisUrl, admin, profileDir, createDatabase, postgresCpu, cleanup };
}
