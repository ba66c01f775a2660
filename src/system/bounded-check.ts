// One live check of a dependency, bounded (a frozen one must not hold the answer for the pool's or
// the Redis client's own, longer timeouts) and reported to the dependency monitor, which logs an
// outage once when it starts and once when it ends. Used by /readyz and /ops/system.
import type { Dependency, DependencyMonitor } from '../platform/dependencies';

export type BoundedResult<T> = { ok: true; value: T; latencyMs: number } | { ok: false; timedOut: boolean };

class TimedOut extends Error {}

export async function boundedCheck<T>(name: Dependency, monitor: DependencyMonitor, boundMs: number, probe: () => Promise<T>): Promise<BoundedResult<T>> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const value = await Promise.race([
      probe(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new TimedOut(`no answer within ${boundMs} ms`)), boundMs);
      }),
    ]);
    monitor.up(name);
    return { ok: true, value, latencyMs: Math.round((performance.now() - start) * 100) / 100 };
  } catch (err) {
    monitor.failed(name, err);
    return { ok: false, timedOut: err instanceof TimedOut };
  } finally {
    clearTimeout(timer);
  }
}
