// GET /ops/system: the instance that answers, the release it runs, its process, its dependencies
// checked live, its job workers and its configuration (config-view.ts).
import type { AppContext } from '../app-context';
import type { Dependency, DependencyMonitor } from '../platform/dependencies';
import type { InstanceIdentity } from '../releases/registry';
import type { Release } from '../releases/store';
import { QUEUES } from '../jobs/config';
import { configView, type ConfigValue } from './config-view';
import { databaseServerVersion } from './probe-store';

/**
 * How long each dependency may take to answer: a frozen one must not hold the answer for the
 * pool's or the Redis client's own timeouts, which are longer.
 */
export const CHECK_BOUND_MS = 1_000;

export interface DependencyCheck {
  reachable: boolean;
  latencyMs: number | null;
  version: string | null;
}

export interface SystemInfo {
  instance: InstanceIdentity;
  release: Release;
  node: string;
  uptimeSeconds: number;
  memory: { rss: number; heapUsed: number; heapTotal: number };
  database: DependencyCheck;
  redis: DependencyCheck;
  workers: { running: boolean; queues: { name: string; concurrency: number }[] };
  config: Record<string, ConfigValue>;
}

/**
 * One round trip that answers the server's version, bounded by CHECK_BOUND_MS. Reported to the
 * dependency monitor like the readiness checks, so an outage noticed here is logged once.
 */
async function check(name: Dependency, monitor: DependencyMonitor, askVersion: () => Promise<string>): Promise<DependencyCheck> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const version = await Promise.race([
      askVersion(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_BOUND_MS} ms`)), CHECK_BOUND_MS);
      }),
    ]);
    monitor.up(name);
    return { reachable: true, latencyMs: Math.round((performance.now() - start) * 100) / 100, version };
  } catch (err) {
    monitor.failed(name, err);
    return { reachable: false, latencyMs: null, version: null };
  } finally {
    clearTimeout(timer);
  }
}

async function redisServerVersion(app: AppContext): Promise<string> {
  const info = await app.redis.info('server');
  return /^redis_version:(.+)$/m.exec(info)?.[1]?.trim() ?? 'unknown';
}

/** `env`: read for whether secrets were given (never their values); tests pass their own. */
export async function describeSystem(app: AppContext, env: Record<string, string | undefined> = process.env): Promise<SystemInfo> {
  const [database, redis] = await Promise.all([
    check('database', app.dependencies, () => databaseServerVersion(app.db)),
    check('redis', app.dependencies, () => redisServerVersion(app)),
  ]);
  const memory = process.memoryUsage();
  const workersRunning = app.jobs.running;
  return {
    instance: app.instance.identity,
    release: app.instance.release(),
    node: process.version,
    uptimeSeconds: Math.floor(process.uptime()),
    memory: { rss: memory.rss, heapUsed: memory.heapUsed, heapTotal: memory.heapTotal },
    database,
    redis,
    workers: { running: workersRunning, queues: workersRunning ? QUEUES.map((name) => ({ name, concurrency: app.jobs.concurrencyOf(name) })) : [] },
    config: configView(app.config, app.mailer.describe(), env),
  };
}
