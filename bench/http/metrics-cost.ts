// What counting every answer for Prometheus costs, in instructions per request: our service run
// under valgrind's callgrind, which counts the instructions it executes whatever else the machine
// is doing, with METRICS_PORT unset, set, and unset again (an A/A pair: how far two runs without
// metrics differ, the noise floor of the comparison).
//
//   npm run bench:metrics -- [--warmup 4000] [--requests 2000] [--no-build]
//
// Why not bench:http's throughput: on this 2-core shared machine two identical instances differ
// by up to 18 % in req/s (A/A run, 2026-11-26), so a 3 % cost cannot be read off it. Instructions
// do not depend on the load of the machine.
//
// How: node runs with --single-threaded (no concurrent compiler or GC threads, so the work is
// the same from run to run) under `valgrind --tool=callgrind --instr-atstart=no`. Each instance
// is warmed up uninstrumented (`--warmup` requests of each route, sequential, so V8 has optimised
// the hot code), then instrumentation is turned on (callgrind_control -i on) and, per route,
// the counters are zeroed, `--requests` requests sent one after another, and the count dumped.
// An idle window as long as the route's counts what timers cost (the dependency monitor's
// pings, the event-loop-delay monitor of prom-client's default metrics): under valgrind the
// wall time of a request is ~50× longer, so per-second work weighs ~50× more per request than
// it does at full speed. Both figures are printed: "raw" and "less idle".
//
// Needs valgrind (Debian's package), PostgreSQL and Redis as bench:http does.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { openScratch } from '../scratch';
import { parseOptions } from '../options';
import { freePort, sleep, stopProcess, type Server } from '../processes';
import { buildService, startService } from '../service';
import { seedBenchUser } from './seed';

const AIM = 0.03;

interface Options {
  warmup: number;
  requests: number;
  build: boolean;
}

const USAGE = 'usage: npm run bench:metrics -- [--warmup 4000] [--requests 2000] [--no-build]';

/**
 * Where valgrind's gdbserver and callgrind_control meet. Both name their pipes after $USER and
 * $HOST, and the service's HOST (its listen address) is not this shell's: callgrind_control is
 * given the service's.
 */
let vgdbPrefix = '';

function callgrind(...args: string[]): string {
  const r = spawnSync('callgrind_control', [`--vgdb-prefix=${vgdbPrefix}`, ...args], { encoding: 'utf8', env: { ...process.env, HOST: '127.0.0.1' } });
  if (process.env.DEBUG_CG) console.log(args, r.stdout, r.stderr);
  if (r.status !== 0 || !r.stdout.includes('OK.')) throw new Error(`callgrind_control ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/**
 * The instruction total of dump number `dumps` of `outFile` (callgrind writes outFile.1, .2, …).
 * Valgrind takes a command when the process next runs: an idle server writes the dump at its
 * next timer, so the file is waited for.
 */
async function dumpTotal(outFile: string, dumps: number): Promise<number> {
  const file = `${outFile}.${dumps}`;
  const deadline = Date.now() + 120_000;
  while (!fs.existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`${file} was not written; the folder holds ${fs.readdirSync(path.dirname(file)).join(', ')}`);
    await sleep(100);
  }
  await sleep(500); // written in one go, but not atomically
  const text = fs.readFileSync(file, 'utf8');
  const m = /^(?:summary|totals): (\d+)/m.exec(text);
  if (!m) throw new Error(`no total in ${outFile}.${dumps}`);
  return Number(m[1]);
}

async function send(url: string, headers: Record<string, string>, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  }
}

interface Counted {
  /** Instructions per request, all counted. */
  raw: number;
  /** Less what an idle window as long costs. */
  lessIdle: number;
}

async function main(): Promise<void> {
  const opts = parseOptions<Options>(process.argv.slice(2), { warmup: 4000, requests: 2000, build: true }, {
    usage: USAGE,
    numbers: { '--warmup': 'warmup', '--requests': 'requests' },
    switches: { '--no-build': (o) => (o.build = false) },
  });
  if (spawnSync('valgrind', ['--version']).status !== 0) {
    console.error('valgrind is missing: apt-get install -y valgrind');
    process.exitCode = 1;
    return;
  }
  const mainJs = buildService(opts.build);
  const scratch = openScratch('metrics');
  vgdbPrefix = path.join(scratch.profileDir, 'vgdb');
  try {
    const { dbUrl, token } = await seedBenchUser(scratch, 'bench-password-correct-horse', 4);
    const auth = `Bearer ${token}`;
    const routes: { label: string; path: string; headers: Record<string, string> }[] = [
      { label: 'GET /v1/ping', path: '/v1/ping', headers: {} },
      { label: 'GET /v1/auth/me', path: '/v1/auth/me', headers: { Authorization: auth } },
    ];
    const variants = [
      { label: 'without METRICS_PORT', metrics: false },
      { label: 'with METRICS_PORT', metrics: true },
      { label: 'without METRICS_PORT, again', metrics: false },
    ];
    console.log(
      `\ninstructions per request (callgrind, node ${process.version} --single-threaded, NODE_ENV=production, LOG_LEVEL=warn): ` +
        `${opts.warmup} warm-up requests per route uninstrumented, then ${opts.requests} counted, one after another\n`,
    );
    const results: Counted[][] = [];
    for (const variant of variants) {
      const outFile = path.join(scratch.profileDir, `callgrind-${results.length}.out`);
      // The per-IP limit raised, as bench:http does: every request comes from 127.0.0.1.
      const env: Record<string, string> = { RATE_LIMIT_IP_PER_MINUTE: '1000000000', ...(variant.metrics ? { METRICS_PORT: String(await freePort()) } : {}) };
      const started = Date.now();
      const server: Server = await startService(`our service ${variant.label}`, {
        mainJs,
        cpu: null,
        launcher: ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${outFile}`, `--vgdb-prefix=${vgdbPrefix}`],
        nodeFlags: ['--single-threaded'],
        sessionSecret: randomBytes(32).toString('base64url'),
        databaseUrl: dbUrl,
        redisUrl: scratch.redisUrl,
        redisPrefix: scratch.prefix,
        auth,
        env,
      });
      const pid = String(server.child.pid);
      for (const route of routes) await send(`${server.url}${route.path}`, route.headers, opts.warmup);
      callgrind('-i', 'on', pid);
      let dumps = 0;
      const counted: Counted[] = [];
      for (const route of routes) {
        callgrind('-z', pid);
        const t0 = performance.now();
        await send(`${server.url}${route.path}`, route.headers, opts.requests);
        const ms = performance.now() - t0;
        callgrind('-d', pid);
        const busy = await dumpTotal(outFile, ++dumps);
        callgrind('-z', pid);
        await sleep(ms);
        callgrind('-d', pid);
        const idle = await dumpTotal(outFile, ++dumps);
        counted.push({ raw: busy / opts.requests, lessIdle: (busy - idle) / opts.requests });
        console.log(
          `  ${variant.label.padEnd(30)} ${route.label.padEnd(16)} ${Math.round(busy / opts.requests).toLocaleString('en').padStart(10)} raw, ` +
            `${Math.round((busy - idle) / opts.requests).toLocaleString('en').padStart(10)} less idle (${(ms / opts.requests).toFixed(1)} ms a request under valgrind)`,
        );
      }
      results.push(counted);
      await stopProcess(server.child, 60_000);
      console.log(`    (${((Date.now() - started) / 1000).toFixed(0)} s with start-up and warm-up)`);
    }
    const [off, on, offAgain] = results as [Counted[], Counted[], Counted[]];
    const pct = (a: number, b: number) => `${(((a - b) / b) * 100).toFixed(2)} %`;
    console.log(`\nmetrics on against off (aim under ${AIM * 100} %), and the A/A pair (the noise floor), per route:`);
    routes.forEach((route, i) => {
      const base = (off[i]!.lessIdle + offAgain[i]!.lessIdle) / 2;
      const baseRaw = (off[i]!.raw + offAgain[i]!.raw) / 2;
      const cost = (on[i]!.lessIdle - base) / base;
      console.log(
        `  ${route.label.padEnd(16)} cost ${pct(on[i]!.lessIdle, base)} less idle (${pct(on[i]!.raw, baseRaw)} raw) → ${cost < AIM ? 'met' : 'NOT met'}; ` +
          `A/A ${pct(offAgain[i]!.lessIdle, off[i]!.lessIdle)} less idle (${pct(offAgain[i]!.raw, off[i]!.raw)} raw)`,
      );
    });
  } finally {
    await scratch.cleanup();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
