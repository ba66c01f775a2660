// What counting every answer for Prometheus costs: our service's CPU per request with METRICS_PORT
// unset and set, for GET /v1/ping and GET /v1/auth/me, from V8 CPU profiles of the server under
// the same wrk load, in instances of each kind alternating.
//
//   npm run bench:metrics -- [--duration 8] [--warmup 4] [--connections 32] [--pairs 2] [--no-build] [--no-pin]
//
// Two readings per route:
//   - busy: the main thread's CPU per request over the load phase (the profile's samples that are
//     not idle), the median of the instances of each kind; its spread between instances of one
//     kind is printed too (the noise floor on a shared machine);
//   - attributed: the functions whose time per request grows with METRICS_PORT (the answer
//     observer of src/http/request-metrics.ts, the close listener that calls it, prom-client),
//     read off the same profiles: what the counting itself costs, free of the instances' spread.
//
// Why profiles and not throughput: on this 2-core shared machine two identical instances differed
// by up to 18 % in req/s (A/A run, 2026-11-26). Callgrind's instruction counts were tried too:
// with valgrind's ~50× slow-down the service's timers and garbage collections land in some
// counting windows and not others, and two identical instances differed by up to 19 % on /me.
//
// Load generator and pinning as in bench/http/run.ts (server on CPU 0, wrk on CPU 1).
import fs from 'node:fs';
import path from 'node:path';
import { openScratch } from '../scratch';
import { parseOptions } from '../options';
import { cpuPinning, freePort, pinByDefault, stopProcess } from '../processes';
import { buildService, startService, UNLIMITED } from '../service';
import { checkWrk, runWrk, wrkRate } from '../wrk';
import { median } from '../rounds';
import { summariseProfile } from './cpu-profile';
import { seedBenchUser } from './seed';

const AIM = 0.03;

interface Options {
  duration: number;
  warmup: number;
  connections: number;
  pairs: number;
  build: boolean;
  pin: boolean;
}

const USAGE = 'usage: npm run bench:metrics -- [--duration 8] [--warmup 4] [--connections 32] [--pairs 2] [--no-build] [--no-pin]';

/**
 * The counting, as a function key of cpu-profile.ts: the server's close listener (src/http/server.ts),
 * which calls the answer observer and through it Metrics.countAnswer and prom-client; inclusive, so
 * nothing is counted twice. (It also forgets the response, 0.1–0.2 µs with metrics off too; the
 * start time taken as the request comes is left out: one hrtime call.)
 */
const COUNTING = /^onResponseClose ours:src\/http:server/;

interface Reading {
  busyUs: number;
  countingUs: number;
  rps: number;
}

async function main(): Promise<void> {
  const opts = parseOptions<Options>(process.argv.slice(2), { duration: 8, warmup: 4, connections: 32, pairs: 2, build: true, pin: pinByDefault() }, {
    usage: USAGE,
    numbers: { '--duration': 'duration', '--warmup': 'warmup', '--connections': 'connections', '--pairs': 'pairs' },
    mayBeZero: ['--warmup'],
    switches: { '--no-build': (o) => (o.build = false), '--no-pin': (o) => (o.pin = false) },
  });
  if (!checkWrk()) return;
  const { serverCpu, wrkCpu } = cpuPinning(opts.pin);
  const mainJs = buildService(opts.build);
  const scratch = openScratch('metrics');
  try {
    const { dbUrl, token } = await seedBenchUser(scratch, 'bench-password-correct-horse', 4);
    const auth = `Bearer ${token}`;
    const routes = [
      { label: 'GET /v1/ping', path: '/v1/ping' },
      { label: 'GET /v1/auth/me', path: '/v1/auth/me' },
    ];
    console.log(
      `\nCPU per request with METRICS_PORT unset and set: node ${process.version}, wrk -t1 -c${opts.connections}, warm-up ${opts.warmup} s, then ${opts.duration} s profiled, ` +
        `${opts.pairs} instance(s) of each kind per route, alternating${opts.pin ? '; server on CPU 0, wrk on CPU 1' : ''}\n`,
    );
    const verdicts: string[] = [];
    for (const route of routes) {
      const readings: Record<'off' | 'on', Reading[]> = { off: [], on: [] };
      for (let i = 0; i < opts.pairs * 2; i++) {
        const kind = i % 2 === 0 ? 'off' : 'on';
        const dir = fs.mkdtempSync(path.join(scratch.profileDir, `${kind}-`));
        // The per-IP limit raised, as bench:http does: every request comes from 127.0.0.1.
        const env: Record<string, string> = { RATE_LIMIT_IP_PER_MINUTE: UNLIMITED, ...(kind === 'on' ? { METRICS_PORT: String(await freePort()) } : {}) };
        const server = await startService(`our service, METRICS_PORT ${kind === 'on' ? 'set' : 'unset'}`, {
          mainJs,
          cpu: serverCpu,
          nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
          databaseUrl: dbUrl,
          redisUrl: scratch.redisUrl,
          redisPrefix: scratch.prefix,
          auth,
          env,
        });
        const target = { url: `${server.url}${route.path}`, auth, connections: opts.connections, cpu: wrkCpu };
        if (opts.warmup > 0) await runWrk(target, opts.warmup);
        const loadStart = performance.now();
        const r = await runWrk(target, opts.duration);
        const loadEnd = performance.now();
        await stopProcess(server.child);
        const exited = performance.now();
        const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
        if (!file) throw new Error(`${server.name}: no profile written`);
        // The profile ends at exit: the load phase is [exit - (exited - loadStart), exit - (exited - loadEnd)].
        const s = summariseProfile(path.join(dir, file), { fromEndUs: (exited - loadStart) * 1000, toEndUs: (exited - loadEnd) * 1000 });
        const perRequest = (ms: number) => (ms * 1000) / Math.max(1, r.requests);
        const counting = s.inclusiveByFunction.filter(([key]) => COUNTING.test(key)).reduce((sum, [, ms]) => sum + ms, 0);
        const reading = { busyUs: perRequest(s.busyMs), countingUs: perRequest(counting), rps: wrkRate(r) };
        readings[kind].push(reading);
        console.log(
          `  ${route.label.padEnd(16)} METRICS_PORT ${kind === 'on' ? 'set  ' : 'unset'} ${reading.rps.toFixed(0).padStart(6)} req/s  busy ${reading.busyUs.toFixed(1).padStart(6)} µs/req` +
            (kind === 'on' ? `, counting ${reading.countingUs.toFixed(1)} µs/req` : ''),
        );
      }
      const off = median(readings.off.map((x) => x.busyUs));
      const on = median(readings.on.map((x) => x.busyUs));
      const counting = median(readings.on.map((x) => x.countingUs));
      const spread = (xs: Reading[]) => `${(((Math.max(...xs.map((x) => x.busyUs)) - Math.min(...xs.map((x) => x.busyUs))) / off) * 100).toFixed(1)} %`;
      verdicts.push(
        `  ${route.label.padEnd(16)} busy ${off.toFixed(1)} → ${on.toFixed(1)} µs/req: ${(((on - off) / off) * 100).toFixed(1)} % (instances of one kind spread ${spread(readings.off)} unset, ${spread(readings.on)} set); ` +
          `counting itself ${counting.toFixed(1)} µs/req = ${((counting / off) * 100).toFixed(1)} % → ${counting / off < AIM ? 'met' : 'NOT met'} (aim under ${AIM * 100} %)`,
      );
    }
    console.log(`\nmetrics on against off (medians of the instances):\n${verdicts.join('\n')}`);
  } finally {
    await scratch.cleanup();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
