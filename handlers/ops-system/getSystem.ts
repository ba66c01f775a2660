import type { Handler } from '../../src/http/handler-types';
import { describeSystem } from '../../src/system/info';
import { toApiRelease } from '../ops-releases/views';

/** Always 200 when the caller is an operator: a dependency that does not answer shows as unreachable. */
export const getSystem: Handler<'getSystem'> = async ({ app }) => {
  const info = await describeSystem(app);
  const dependency = (d: typeof info.database) => ({ reachable: d.reachable, latency_ms: d.latencyMs, version: d.version });
  return {
    status: 200,
    body: {
      instance: { id: info.instance.id, hostname: info.instance.hostname, pid: info.instance.pid, started_at: info.instance.startedAt.toISOString() },
      release: toApiRelease(info.release),
      node: info.node,
      uptime_seconds: info.uptimeSeconds,
      memory: { rss: info.memory.rss, heap_used: info.memory.heapUsed, heap_total: info.memory.heapTotal },
      database: dependency(info.database),
      redis: dependency(info.redis),
      workers: info.workers,
      config: info.config,
    },
  };
};
