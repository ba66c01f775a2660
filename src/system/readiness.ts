// GET /readyz: the database and Redis, checked in parallel with a bound. The answer says which
// dependency is down and a fixed reason ("unreachable", "timed out", "migrations not applied
// yet"), never the driver's message (hosts, ports, users); the real error goes to the dependency
// monitor, which logs an outage once when it starts and once when it ends.
import type { AppContext } from '../app-context';
import type { Dependency, DependencyMonitor } from '../platform/dependencies';
import { pingDatabase } from '../platform/database';
import { pingRedis } from '../platform/redis';
import { boundedCheck } from './bounded-check';

export interface Check {
  ok: boolean;
  latencyMs: number | null;
  error?: 'unreachable' | 'timed out' | 'migrations not applied yet';
}

const CHECK_TIMEOUT_MS = 2_000;

async function timed(name: Dependency, monitor: DependencyMonitor, probe: () => Promise<unknown>): Promise<Check> {
  const r = await boundedCheck(name, monitor, CHECK_TIMEOUT_MS, probe);
  return r.ok ? { ok: true, latencyMs: r.latencyMs } : { ok: false, latencyMs: null, error: r.timedOut ? 'timed out' : 'unreachable' };
}

/** Checks the database and Redis in parallel; never ready once the instance is shutting down. */
export async function checkReadiness(app: AppContext): Promise<{ ready: boolean; shuttingDown: boolean; database: Check; redis: Check }> {
  const [database, redis] = await Promise.all([
    app.state.databaseReady
      ? timed('database', app.dependencies, () => pingDatabase(app.db))
      : Promise.resolve<Check>({ ok: false, latencyMs: null, error: 'migrations not applied yet' }),
    timed('redis', app.dependencies, () => pingRedis(app.redis)),
  ]);
  return { ready: database.ok && redis.ok && !app.state.shuttingDown, shuttingDown: app.state.shuttingDown, database, redis };
}
