import type { AppContext } from '../app-context';
import { pingDatabase } from '../platform/database';
import { pingRedis } from '../platform/redis';

export interface Check {
  ok: boolean;
  latencyMs: number | null;
  error?: string;
}

const CHECK_TIMEOUT_MS = 2_000;

async function timed(probe: () => Promise<number>): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const latency = await Promise.race([
      probe(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { ok: true, latencyMs: Math.round(latency * 100) / 100 };
  } catch (err) {
    return { ok: false, latencyMs: null, error: err instanceof Error ? err.message || err.name : String(err) };
  } finally {
    clearTimeout(timer);
  }
}

/** Checks the database and Redis in parallel. */
export async function checkReadiness(app: AppContext): Promise<{ ready: boolean; database: Check; redis: Check }> {
  const [database, redis] = await Promise.all([
    app.state.databaseReady
      ? timed(() => pingDatabase(app.db))
      : Promise.resolve<Check>({ ok: false, latencyMs: null, error: 'migrations not applied yet' }),
    timed(() => pingRedis(app.redis)),
  ]);
  return { ready: database.ok && redis.ok, database, redis };
}
