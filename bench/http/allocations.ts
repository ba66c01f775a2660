// What a request allocates, and where: our service built in this process (as bench:jobs builds
// it), loaded by wrk, under V8's sampling heap profiler with the objects that garbage collections
// freed counted too (HeapProfiler.startSampling, includeObjectsCollectedByMinor/MajorGC). Garbage
// collection is most of what separates our CPU per request from the bare Express server's on /me
// (README "Performance"): this says what to allocate less of.
//
//   npm run bench:allocations -- [--route /v1/auth/me] [--duration 4] [--connections 50]
//
// Needs wrk, PostgreSQL and Redis as bench:http does. Not pinned: the load generator shares the
// machine, which changes the rate, not what a request allocates.
import inspector from 'node:inspector';
import v8 from 'node:v8';
import { PerformanceObserver, constants as perfConstants, type PerformanceEntry } from 'node:perf_hooks';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { openScratch } from '../scratch';
import { parseOptions } from '../options';
import { checkWrk, runWrk } from '../wrk';
import { packageOf } from './cpu-profile';
import { seedBenchUser } from './seed';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createDatabase } from '../../src/platform/database';
import { createRedis } from '../../src/platform/redis';
import { buildAppContext } from '../../src/app-context-factory';
import { createApp } from '../../src/app';
import { UNLIMITED } from '../service';
import { createHttpServer } from '../../src/http/server';

interface Options {
  route: string;
  duration: number;
  connections: number;
}

interface SampleNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SampleNode[];
}

const USAGE = 'usage: npm run bench:allocations -- [--route /v1/auth/me] [--duration 4] [--connections 50]';

/**
 * The garbage collections while `load` runs (no sampler attached): how many of each kind, their
 * time per request, and the heap they worked on. Minor ones (scavenges) cost with what survives
 * them; major ones (mark-compact) with the whole live heap, so a big heap makes each one dearer.
 */
async function gcUnderLoad(load: () => Promise<{ requests: number }>): Promise<void> {
  const kinds: Record<number, string> = {
    [perfConstants.NODE_PERFORMANCE_GC_MINOR]: 'minor (scavenge)',
    [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: 'major (mark-compact)',
    [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
    [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
  };
  const byKind = new Map<string, { count: number; ms: number; longest: number }>();
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = kinds[((entry as PerformanceEntry & { detail?: { kind: number } }).detail?.kind ?? -1)] ?? 'other';
      const k = byKind.get(kind) ?? { count: 0, ms: 0, longest: 0 };
      k.count++;
      k.ms += entry.duration;
      k.longest = Math.max(k.longest, entry.duration);
      byKind.set(kind, k);
    }
  });
  const heapBefore = v8.getHeapStatistics().used_heap_size;
  observer.observe({ entryTypes: ['gc'] });
  const r = await load();
  observer.disconnect();
  console.log(`\ngarbage collection under load (${r.requests} requests; heap in use before: ${(heapBefore / 1048576).toFixed(1)} MB)`);
  for (const [kind, k] of byKind) {
    console.log(`  ${kind.padEnd(22)} ${String(k.count).padStart(5)} × ${((k.ms * 1000) / Math.max(1, r.requests)).toFixed(1).padStart(6)} µs/request, longest ${k.longest.toFixed(1)} ms`);
  }
}

function post<T>(session: inspector.Session, method: string, params: object = {}): Promise<T> {
  return new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result as T))));
}

async function main(): Promise<void> {
  const opts = parseOptions<Options>(process.argv.slice(2), { route: '/v1/auth/me', duration: 4, connections: 50 }, {
    usage: USAGE,
    numbers: { '--duration': 'duration', '--connections': 'connections' },
    values: { '--route': { needs: 'a path such as /v1/auth/me', set: (o, v) => (o.route = v) } },
  });
  if (!checkWrk()) return;
  const scratch = openScratch('allocations');
  try {
    const { dbUrl, token } = await seedBenchUser(scratch, 'bench-password-correct-horse', 4);
    const config = loadConfig({
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: dbUrl,
      SESSION_SECRET: 'bench-allocations-session-secret-0123456789',
      PUBLIC_BASE_URL: 'http://127.0.0.1',
      MFA_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
      REDIS_PREFIX: scratch.prefix,
      LOG_LEVEL: 'warn',
      MAIL_TRANSPORT: 'log',
      RUN_WORKERS: 'false',
      RATE_LIMIT_IP_PER_MINUTE: UNLIMITED,
    });
    // Silent: the shutdown below drops connections wrk left open, which the service would log.
    const logger = createLogger('silent');
    // The owner's connection (migrated by the seed): what a request allocates does not depend on the role.
    const db = createDatabase(dbUrl, config.databasePoolMax, logger);
    const app = buildAppContext({ config, logger, db, redis: createRedis(config.redis) });
    app.state.databaseReady = true;
    const server = createHttpServer(createApp(app), config, logger);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const target = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${opts.route}`, auth: `Bearer ${token}`, connections: opts.connections, cpu: null };
    try {
      await runWrk(target, 2); // warm-up: optimised code allocates differently
      await gcUnderLoad(() => runWrk(target, opts.duration));
      const session = new inspector.Session();
      session.connect();
      await post(session, 'HeapProfiler.enable');
      await post(session, 'HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      const r = await runWrk(target, opts.duration);
      const { profile } = await post<{ profile: { head: SampleNode } }>(session, 'HeapProfiler.stopSampling');
      session.disconnect();

      const byPackage = new Map<string, number>();
      const byFunction = new Map<string, number>();
      let total = 0;
      const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
      const walk = (node: SampleNode) => {
        total += node.selfSize;
        const pkg = packageOf(node.callFrame);
        add(byPackage, pkg, node.selfSize);
        add(byFunction, `${node.callFrame.functionName || '(anonymous)'} ${pkg}:${path.basename(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`, node.selfSize);
        node.children.forEach(walk);
      };
      walk(profile.head);
      const perRequest = (bytes: number) => (bytes / Math.max(1, r.requests) / 1024).toFixed(2).padStart(7);
      console.log(`\nGET ${opts.route}, wrk -c${opts.connections} for ${opts.duration} s: ${r.requests} requests, ${perRequest(total).trim()} KB allocated per request (sampled every 1 KB)\n`);
      console.log('by package (where the allocating function is)');
      for (const [k, v] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${perRequest(v)} KB  ${k}`);
      console.log('\nby function');
      for (const [k, v] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${perRequest(v)} KB  ${k}`);
    } finally {
      server.closeAllConnections();
      server.close();
      await new Promise((resolve) => setTimeout(resolve, 500)); // the requests of the dropped connections end
      await app.jobs.stop().catch(() => undefined);
      app.redis.disconnect();
      await db.destroy();
    }
  } finally {
    await scratch.cleanup();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
