// GET /readyz: the database and Redis, checked in parallel with a bound. The answer says which
// dependency is down and a fixed reason ("unreachable", "timed out", "migrations not applied
// yet"), never the driver's message (hosts, ports, users); the real error is logged, once per
// change of state.
import type { AppContext } from '../app-context';
import type { Logger } from '../logger';
import { pingDatabase } from '../platform/database';
import { pingRedis } from '../platform/redis';

export interface Check {
  ok: boolean;
  latencyMs: number | null;
  error?: 'unreachable' | 'timed out' | 'migrations not applied yet';
}

const CHECK_TIMEOUT_MS = 2_000;

class TimedOut extends Error {}

/** Last state logged per dependency, so an outage is logged once (and its end once). */
const lastLogged = new WeakMap<Logger, Map<string, boolean>>();

function logChange(logger: Logger, name: string, ok: boolean, err?: unknown) {
  let states = lastLogged.get(logger);
  if (!states) lastLogged.set(logger, (states = new Map()));
  if (states.get(name) === ok) return;
  states.set(name, ok);
  if (ok) logger.info('readiness: dependency reachable', { dependency: name });
  else logger.error('readiness: dependency not reachable', { dependency: name, error: err instanceof Error ? err.message || err.name : String(err) });
}

async function timed(name: string, logger: Logger, probe: () => Promise<number>): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const latency = await Promise.race([
      probe(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new TimedOut(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    logChange(logger, name, true);
    return { ok: true, latencyMs: Math.round(latency * 100) / 100 };
  } catch (err) {
    logChange(logger, name, false, err);
    return { ok: false, latencyMs: null, error: err instanceof TimedOut ? 'timed out' : 'unreachable' };
  } finally {
    clearTimeout(timer);
  }
}

/** Checks the database and Redis in parallel. */
export async function checkReadiness(app: AppContext): Promise<{ ready: boolean; database: Check; redis: Check }> {
  const [database, redis] = await Promise.all([
    app.state.databaseReady
      ? timed('database', app.logger, () => pingDatabase(app.db))
      : Promise.resolve<Check>({ ok: false, latencyMs: null, error: 'migrations not applied yet' }),
    timed('redis', app.logger, () => pingRedis(app.redis)),
  ]);
  return { ready: database.ok && redis.ok, database, redis };
}
