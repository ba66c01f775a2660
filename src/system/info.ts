// GET /ops/system: the instance that answers, the release it runs, its process, its dependencies
// checked live, its job workers and its configuration (config-view.ts).
import type { AppContext } from '../app-context';
import type { InstanceIdentity } from '../releases/registry';
import type { Release } from '../releases/service';
import { QUEUES } from '../jobs/config';
import { configView, type ConfigValue } from './config-view';
import { databaseServerVersion } from './probe-store';
import { boundedCheck } from './bounded-check';

/**
 * How long each dependency may take to answer: a frozen one must not hold the answer for the
 * pool's or the Redis client's own timeouts, which are longer.
 */
export const CHECK_BOUND_MS = 1_000;

interface DependencyCheck {
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

/** One round trip that answers the server's version (bounded, reported like the readiness checks). */
async function check(app: AppContext, name: 'database' | 'redis', askVersion: () => Promise<string>): Promise<DependencyCheck> {
  const r = await boundedCheck(name, app.dependencies, CHECK_BOUND_MS, askVersion);
  return r.ok ? { reachable: true, latencyMs: r.latencyMs, version: r.value } : { reachable: false, latencyMs: null, version: null };
}

async function redisServerVersion(app: AppContext): Promise<string> {
  const info = await app.redis.info('server');
  return /^redis_version:(.+)$/m.exec(info)?.[1]?.trim() ?? 'unknown';
}

export async function describeSystem(app: AppContext): Promise<SystemInfo> {
  const [database, redis] = await Promise.all([
    check(app, 'database', () => databaseServerVersion(app.db)),
    check(app, 'redis', () => redisServerVersion(app)),
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
    config: configView(app.config, app.mailer.describe()),
  };
}
