// Where the database pool and the Redis connection tell metrics (src/platform/metrics.ts) what
// they do: the pool's sizes read at scrape time, failed statements and commands counted as they
// fail. Nothing here runs on a statement or command that succeeds, apart from ioredis's own call.
import type { Command } from 'ioredis';
import type { Db } from './database';
import type { RedisClient } from './redis';
import { unavailableDependency } from './dependencies';
import type { Metrics } from './metrics';

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

/** The pool's connections lent out, open and free, and the requests waiting for one. */
export function poolSizes(db: Db): { used: number; free: number; pending: number } {
  const pool = db.client.pool as TarnPool | undefined;
  if (!pool) return { used: 0, free: 0, pending: 0 };
  return { used: pool.numUsed(), free: pool.numFree(), pending: pool.numPendingAcquires() };
}

/** Every statement of `db` (its transactions' too: knex passes their events up) that fails. */
export function countQueryErrors(db: Db, metrics: Pick<Metrics, 'dbQueryErrors'>): void {
  const [unavailable, other] = zeroed(metrics.dbQueryErrors);
  db.on('query-error', (err: unknown) => (unavailableDependency(err) === 'database' ? unavailable : other).inc());
}

/**
 * Every command of `redis` that fails. ioredis has no event for a failed command, only for the
 * connection: each command's promise is watched as it is sent (one `catch` per command).
 */
export function countCommandErrors(redis: RedisClient, metrics: Pick<Metrics, 'redisErrors'>): void {
  const [unavailable, other] = zeroed(metrics.redisErrors);
  const failed = (err: unknown) => (unavailableDependency(err) === 'redis' ? unavailable : other).inc();
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command: Command, ...rest: [never?]) => {
    command.promise.catch(failed);
    return send(command, ...rest);
  };
}

/** Both reasons' counters, exported at 0 from the start: a rate over a series that appears only at the first error misses it. */
function zeroed(counter: Metrics['dbQueryErrors']) {
  counter.inc({ reason: 'unavailable' }, 0);
  counter.inc({ reason: 'error' }, 0);
  return [counter.labels('unavailable'), counter.labels('error')] as const;
}
