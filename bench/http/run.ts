// Requests per second and p50/p99 latency of a running instance of our service (built, started
// as a child process) for GET /v1/ping, authenticated GET /v1/auth/me (bearer) and
// POST /v1/auth/login, beside a bare Express 5 + pg server (the ceiling: bench/bare/express.ts, the
// same ping, the same session SQL for /me, and for login the same statements, Redis script and
// bcrypt compare) and a bare node:http one (what Express itself costs), and bare bcrypt.compare at
// the same cost (login's aim) — each in its own process, in the same run. Beside each rate: the
// CPU per request of the server process and of the scratch database's PostgreSQL backends.
// What metrics cost is measured by `npm run bench:metrics` (instructions, not throughput).
//
//   npm run bench:http -- [--duration 5] [--warmup 2] [--connections 50] [--login-connections 8]
//                         [--rounds 3] [--no-build] [--no-pin] [--profile]
//
// Rounds: every target (and bare bcrypt) runs once per round, in a rotating order; the ratios are
// the median of the per-round ratios, which drifting load from other processes moves least.
//
// Load generator: Debian's `wrk` (apt-get install -y wrk), in its own process. It is written in
// C with one epoll loop per thread, so on a 2-core machine it needs a fraction of a core to
// saturate a Node server; autocannon is itself a Node process whose per-request cost is close
// to the servers' own, so it would cap bare node:http and take CPU from the server under test.
//
// CPU pinning (default, when the machine has 2+ cores): each server runs on CPU 0 and wrk on
// CPU 1, so the load generator never steals the server's core. Postgres and Redis float. Login
// (a second, unpinned instance of the service) and bare bcrypt are not pinned: both use libuv's
// thread pool and every core, like production.
//
// Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; BENCH_DATABASE_URL to change) and
// Redis (REDIS_URL, default redis://127.0.0.1:6379). Creates a scratch database bench_http_<random>
// and the Redis key prefix bench-http:<random>:, and removes both (and every child process) at the end.
import os from 'node:os';
import path from 'node:path';
import { adminUrl, openScratch } from '../scratch';
import { parseOptions } from '../options';
import { cpuPinning, freePort, pinByDefault, runForJsonLine, sleep, type Server } from '../processes';
import { buildService, profileService, startBareServer, startService, UNLIMITED } from '../service';
import { checkWrk, printMeasured, runMeasured, runWrk, wrkRate, type MeasuredRow, type MeasuredTarget } from '../wrk';
import { seedBenchUser } from './seed';
import { fmtRate, median, medianBy, medianRow, rotate } from '../rounds';
import { loadConfig, projectRoot } from '../../src/config';
import { connectionString } from '../../src/platform/database';
import { appDatabase } from '../../src/platform/database-roles';

// Issue 26: ≥ 0.9× bare Express 5 (+ pg, the same session SQL, for /me), p99 ≤ 1.5× its; login ≥ 0.95× bare bcrypt.
const AIMS = { vsExpress: 0.9, p99VsExpress: 1.5, loginVsBcrypt: 0.95 };
const BCRYPT_COST = 10;
const PASSWORD = 'bench-password-correct-horse';
/** pg_stat_database counters of a backend are flushed at most once a second, idle ones after 10 s. */
const STATS_SETTLE_MS = 11_000;

interface Options {
  duration: number;
  warmup: number;
  connections: number;
  loginConnections: number;
  rounds: number;
  build: boolean;
  pin: boolean;
  profile: boolean;
}

const USAGE =
  'usage: npm run bench:http -- [--duration 5] [--warmup 2] [--connections 50] [--login-connections 8] [--rounds 3] [--no-build] [--no-pin] [--profile]';

function parseArgs(argv: string[]): Options {
  const defaults: Options = { duration: 5, warmup: 2, connections: 50, loginConnections: 8, rounds: 3, build: true, pin: pinByDefault(), profile: false };
  return parseOptions(argv, defaults, {
    usage: USAGE,
    numbers: { '--duration': 'duration', '--warmup': 'warmup', '--connections': 'connections', '--login-connections': 'loginConnections', '--rounds': 'rounds' },
    mayBeZero: ['--warmup'],
    switches: { '--no-build': (o) => (o.build = false), '--no-pin': (o) => (o.pin = false), '--profile': (o) => (o.profile = true) },
  });
}

// ---------------------------------------------------------------------------------------------
// Load

type Target = MeasuredTarget;
type Row = MeasuredRow;
const printRow = (r: Row) => printMeasured(r, 34);

/** Sends `n` requests one after another (keep-alive) and returns how many database transactions they caused. */
async function transactionsPerRequest(url: string, init: RequestInit, n: number, xacts: () => Promise<number>): Promise<number> {
  const before = await xacts();
  for (let i = 0; i < n; i++) {
    const res = await fetch(url, init);
    await res.arrayBuffer();
  }
  await sleep(STATS_SETTLE_MS);
  return ((await xacts()) - before) / n;
}

interface BcryptResult {
  ops: number;
  ms: number;
  ops_per_s: number;
  p50_ms: number;
  p99_ms: number;
  threadpool: number;
  cpu_us_per_op: number;
}

function runBcrypt(seconds: number, concurrency: number): Promise<BcryptResult> {
  const args = ['--import', 'tsx', path.join(__dirname, 'bcrypt.ts'), String(BCRYPT_COST), String(seconds), String(concurrency)];
  return runForJsonLine<BcryptResult>('bcrypt bench', process.execPath, args, { cwd: projectRoot }, 'BCRYPT_JSON ');
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  if (!checkWrk()) return;
  const cpus = os.cpus().length;
  const { serverCpu, wrkCpu } = cpuPinning(opts.pin);

  const mainJs = buildService(opts.build);

  const scratch = openScratch('http');
  const { id, database, prefix, redisUrl, admin, profileDir } = scratch;

  try {
    // Scratch database, migrated, with one user (password at the bench cost) and a bearer session.
    const { dbUrl, email, token } = await seedBenchUser(scratch, PASSWORD, BCRYPT_COST);
    const dbXacts = async () => {
      const { rows } = await admin.raw('select xact_commit + xact_rollback as n from pg_stat_database where datname = ?', [database]);
      return Number(rows[0]?.n ?? 0);
    };

    const startOurs = (name: string, cpu: number | null, nodeFlags: string[] = [], env: Record<string, string> = {}) =>
      startService(name, {
        mainJs,
        cpu,
        nodeFlags,
        databaseUrl: dbUrl,
        redisUrl,
        redisPrefix: prefix,
        auth: `Bearer ${token}`,
        env: {
          BCRYPT_COST: String(BCRYPT_COST),
          RATE_LIMIT_LOGIN_PER_MINUTE: UNLIMITED,
          RATE_LIMIT_REGISTER_PER_MINUTE: UNLIMITED,
          RATE_LIMIT_EMAIL_PER_15_MINUTES: UNLIMITED,
          RATE_LIMIT_IP_PER_MINUTE: UNLIMITED,
          ...env,
        },
      });

    const ours = await startOurs('our service', serverCpu);
    // The baselines send the session lookup as the service's application role (prepared by the
    // service's start), with its pool size.
    const bareConfig = loadConfig({ NODE_ENV: 'test', DATABASE_URL: dbUrl });
    const bareEnv = {
      BARE_DATABASE_URL: await connectionString(appDatabase(bareConfig, dbUrl)),
      BARE_POOL_MAX: String(bareConfig.databasePoolMax),
      BARE_REDIS_URL: redisUrl,
      BARE_REDIS_PREFIX: `${prefix}bare:`,
      BARE_BCRYPT_COST: String(BCRYPT_COST),
    };
    const startBare = (name: string, file: string, cpu = serverCpu) => startBareServer(name, path.join(__dirname, '../bare', file), cpu, bareEnv);
    // Login is measured on unpinned instances: taskset pins every thread of a process, and
    // bcrypt runs on libuv's thread pool, which should have both cores, as bare bcrypt does.
    const oursLogin = serverCpu === null ? ours : await startOurs('our service (unpinned, for login)', null);
    const express = await startBare('bare Express 5 + pg', 'express.ts');
    const expressLogin = serverCpu === null ? express : await startBare('bare Express 5 + pg (unpinned, for login)', 'express.ts', null);
    const bare = await startBare('bare node:http + pg', 'node.ts');

    // What the endpoints answer before the load (a non-200 is reported beside the numbers).
    const loginBody = JSON.stringify({ email, password: PASSWORD, transport: 'bearer' });
    const meStatus = (await fetch(`${ours.url}/v1/auth/me`, { headers: { Authorization: `Bearer ${token}` } })).status;
    const loginProbe = await fetch(`${oursLogin.url}/v1/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: loginBody });
    const loginStatus = loginProbe.status;
    await loginProbe.arrayBuffer();
    const bareLogin = await fetch(`${expressLogin.url}/v1/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: loginBody });
    if (bareLogin.status !== 200) throw new Error(`bare Express login answered ${bareLogin.status}: ${await bareLogin.text()}`);
    await bareLogin.arrayBuffer();

    console.log(
      `\nHTTP benchmark: node ${process.version}, ${cpus} CPUs (${os.cpus()[0]?.model ?? '?'}, load average ${os.loadavg()[0]!.toFixed(1)}), wrk -t1 -c${opts.connections} (login -c${opts.loginConnections}), ` +
        `warm-up ${opts.warmup} s, ${opts.duration} s × ${opts.rounds} round(s) (median), ` +
        (opts.pin ? 'servers pinned to CPU 0, wrk to CPU 1' : 'no CPU pinning') +
        `\nour service: node dist/src/main.js serve, NODE_ENV=production, RUN_WORKERS=false, LOG_LEVEL=warn, BCRYPT_COST=${BCRYPT_COST}, rate limits raised; scratch database ${database}\n`,
    );

    const target = (label: string, server: Server, p: string, extra: Partial<Target> = {}): Target => ({
      label,
      url: `${server.url}${p}`,
      connections: opts.connections,
      cpu: wrkCpu,
      pid: server.child.pid!, // taskset execs the command: the same pid
      ...extra,
    });
    const meHeaders = { Authorization: `Bearer ${token}` };
    const t = {
      node: target('bare node:http  GET /v1/ping', bare, '/v1/ping'),
      express: target('bare Express 5  GET /v1/ping', express, '/v1/ping'),
      expressMe: target('bare Express 5  GET /v1/auth/me', express, '/v1/auth/me', { auth: meHeaders.Authorization }),
      nodeMe: target('bare node:http  GET /v1/auth/me', bare, '/v1/auth/me', { auth: meHeaders.Authorization }),
      ping: target('ours            GET /v1/ping', ours, '/v1/ping'),
      me: target('ours            GET /v1/auth/me', ours, '/v1/auth/me', { auth: meHeaders.Authorization }),
      // Login and bcrypt use the thread pool on every core: neither is pinned.
      login: target('ours            POST /v1/auth/login', oursLogin, '/v1/auth/login', { method: 'POST', body: loginBody, connections: opts.loginConnections, cpu: null }),
      expressLogin: target('bare Express 5  POST /v1/auth/login', expressLogin, '/v1/auth/login', { method: 'POST', body: loginBody, connections: opts.loginConnections, cpu: null }),
    };

    // Database round trips: sequential requests, counted by pg_stat_database (the scratch database is ours alone).
    const CHECK_N = 200;
    const CHECK_LOGINS = 40;
    console.log(`database transactions per request (${CHECK_N} sequential requests each, pg_stat_database of the scratch database):`);
    // Warm the pool first (a new connection's start-up counts as a transaction), then let the counters settle.
    for (let i = 0; i < 10; i++) await (await fetch(t.me.url, { headers: meHeaders })).arrayBuffer();
    await sleep(STATS_SETTLE_MS);
    const meXacts = await transactionsPerRequest(t.me.url, { headers: meHeaders }, CHECK_N, dbXacts);
    const pingXacts = await transactionsPerRequest(t.ping.url, {}, CHECK_N, dbXacts);
    // A sign-in's statements run without BEGIN/COMMIT: each is a transaction of its own.
    const login = { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: loginBody };
    const loginXacts = await transactionsPerRequest(t.login.url, login, CHECK_LOGINS, dbXacts);
    const expressLoginXacts = await transactionsPerRequest(t.expressLogin.url, login, CHECK_LOGINS, dbXacts);
    // Ping sends no statement: what it counts is the instance's own background work (heartbeats,
    // settings), which /me's count includes too.
    const meOwnXacts = meXacts - pingXacts;
    console.log(`    GET /v1/ping ${pingXacts.toFixed(3)} (the instance's background work), GET /v1/auth/me ${meXacts.toFixed(3)}: ${meOwnXacts.toFixed(3)} of its own`);
    console.log(`    POST /v1/auth/login (${CHECK_LOGINS} each): ours ${loginXacts.toFixed(3)}, bare Express ${expressLoginXacts.toFixed(3)}\n`);

    const order = [t.node, t.express, t.nodeMe, t.expressMe, t.ping, t.me, t.expressLogin, t.login];
    if (opts.warmup > 0) {
      console.log(`warm-up: ${opts.warmup} s each`);
      for (const target of order) await runWrk(target, opts.warmup);
    }
    const rows = new Map<Target, Row[]>(order.map((target) => [target, []]));
    const bcryptRuns: BcryptResult[] = [];
    const roundRatios = { ping: [] as number[], me: [] as number[], login: [] as number[], loginVsExpress: [] as number[], expressLoginVsBcrypt: [] as number[], expressVsNode: [] as number[], expressMeVsNode: [] as number[] };
    for (let round = 1; round <= opts.rounds; round++) {
      console.log(`round ${round}/${opts.rounds}:`);
      // Rotate the order so that no target always runs first (or right after login's CPU burst).
      const rotated = rotate(order, round - 1);
      const got = new Map<Target, Row>();
      for (const target of rotated) {
        const row = await runMeasured(target, opts.duration, scratch.postgresCpu);
        rows.get(target)!.push(row);
        got.set(target, row);
        printRow(row);
      }
      const b = await runBcrypt(opts.duration, opts.loginConnections);
      bcryptRuns.push(b);
      console.log(`    ${`bare bcrypt.compare, cost ${BCRYPT_COST}`.padEnd(34)} ${b.ops_per_s.toFixed(1).padStart(8)} ops/s  p50 ${b.p50_ms.toFixed(1)} ms  p99 ${b.p99_ms.toFixed(1)} ms  CPU ${b.cpu_us_per_op.toFixed(0)} µs/op  (${opts.loginConnections} in flight, thread pool ${b.threadpool})`);
      const rps = (k: Target) => got.get(k)!.rps;
      roundRatios.ping.push(rps(t.ping) / rps(t.express));
      roundRatios.me.push(rps(t.me) / rps(t.expressMe));
      roundRatios.login.push(rps(t.login) / b.ops_per_s);
      roundRatios.loginVsExpress.push(rps(t.login) / rps(t.expressLogin));
      roundRatios.expressLoginVsBcrypt.push(rps(t.expressLogin) / b.ops_per_s);
      roundRatios.expressVsNode.push(rps(t.express) / rps(t.node));
      roundRatios.expressMeVsNode.push(rps(t.expressMe) / rps(t.nodeMe));
    }

    // -----------------------------------------------------------------------------------------
    const r = Object.fromEntries(Object.entries(t).map(([k, target]) => [k, medianRow(rows.get(target)!)])) as Record<keyof typeof t, Row>;
    const bcrypt = medianBy(bcryptRuns, (b) => b.ops_per_s);
    const ratio = (key: keyof typeof roundRatios) => median(roundRatios[key]);
    const meNote = meStatus === 200 ? '' : ` — answered ${meStatus}`;
    const loginNote = loginStatus === 200 ? '' : ` — answered ${loginStatus}`;

    const header = `${'target'.padEnd(36)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'node µs/req'.padStart(11)} ${'pg µs/req'.padStart(9)}  ratio (median of the rounds' ratios)`;
    const line = (row: Row, note: string) =>
      `${row.label.padEnd(36)} ${fmtRate(row.rps).padStart(9)} ${row.p50ms.toFixed(2).padStart(8)} ${row.p99ms.toFixed(2).padStart(8)} ${row.cpuUs.toFixed(0).padStart(11)} ${row.pgCpuUs.toFixed(0).padStart(9)}  ${note}`;
    console.log(
      `\nmedian of ${opts.rounds} round(s) of ${opts.duration} s (CPU per request: "node" the server process's, all its threads; "pg" the scratch database's PostgreSQL backends'):\n${header}\n${'-'.repeat(header.length + 8)}`,
    );
    console.log(line(r.node, 'what Express costs: see the next line'));
    console.log(line(r.express, `the ceiling (${ratio('expressVsNode').toFixed(2)}× node:http)`));
    console.log(line(r.ping, `${ratio('ping').toFixed(2)}× bare Express   (aim ≥ ${AIMS.vsExpress})`));
    console.log(line(r.nodeMe, 'the same session SQL'));
    console.log(line(r.expressMe, `the ceiling (${ratio('expressMeVsNode').toFixed(2)}× node:http)`));
    console.log(line(r.me, `${ratio('me').toFixed(2)}× bare Express   (aim ≥ ${AIMS.vsExpress})${meNote}`));
    console.log(line(r.expressLogin, `the same statements and compare (${ratio('expressLoginVsBcrypt').toFixed(2)}× bare bcrypt)`));
    console.log(line(r.login, `${ratio('login').toFixed(2)}× bare bcrypt    (aim ≥ ${AIMS.loginVsBcrypt}); ${ratio('loginVsExpress').toFixed(2)}× bare Express${loginNote}`));
    console.log(
      `${`bare bcrypt.compare (cost ${BCRYPT_COST})`.padEnd(36)} ${fmtRate(bcrypt.ops_per_s).padStart(9)} ${bcrypt.p50_ms.toFixed(2).padStart(8)} ${bcrypt.p99_ms.toFixed(2).padStart(8)} ${bcrypt.cpu_us_per_op.toFixed(0).padStart(11)} ${''.padStart(9)}  ops/s: the login ceiling (CPU: its threads')`,
    );
    for (const row of Object.values(r)) if (row.errors > 0) console.log(`WARNING: ${row.label}: ${row.errors} socket errors or non-2xx answers over the rounds`);

    const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
    const p99Aim = (ours: Row, ceiling: Row) => `p99 ${ours.p99ms.toFixed(2)} vs ${ceiling.p99ms.toFixed(2)} ms → ${verdict(ours.p99ms <= AIMS.p99VsExpress * ceiling.p99ms)}`;
    const cpuVs = (ours: Row, ceiling: Row) => `CPU per request ${(ours.cpuUs / ceiling.cpuUs).toFixed(2)}× the ceiling's`;
    const loadNow = os.loadavg()[0]!;
    console.log(`\naims (issue 26: ≥ ${AIMS.vsExpress}× bare Express in req/s, p99 ≤ ${AIMS.p99VsExpress}× its; login ≥ ${AIMS.loginVsBcrypt}× bare bcrypt):`);
    console.log(`  GET /v1/ping      ${ratio('ping').toFixed(2)}× → ${verdict(ratio('ping') >= AIMS.vsExpress)}; ${p99Aim(r.ping, r.express)}; ${cpuVs(r.ping, r.express)}`);
    console.log(
      `  GET /v1/auth/me   ${ratio('me').toFixed(2)}× → ${verdict(ratio('me') >= AIMS.vsExpress)}; ${p99Aim(r.me, r.expressMe)}; ${cpuVs(r.me, r.expressMe)}` +
        `; one database round trip: ${meOwnXacts.toFixed(2)} transactions/request → ${verdict(Math.abs(meOwnXacts - 1) < 0.02)}${meNote}`,
    );
    console.log(
      `  login             ${ratio('login').toFixed(2)}× → ${verdict(ratio('login') >= AIMS.loginVsBcrypt)}${loginNote}; ` +
        `bare Express with the same statements and compare: ${ratio('expressLoginVsBcrypt').toFixed(2)}× bare bcrypt, ours ${ratio('loginVsExpress').toFixed(2)}× it; ${cpuVs(r.login, r.expressLogin)}`,
    );
    if (loadNow > cpus) console.log(`  note: load average ${loadNow.toFixed(1)} on ${cpus} CPUs — other processes competed for the CPU; rerun on a quiet machine for absolute numbers (the ratios are per round, so less affected)`);

    if (opts.profile) {
      const profiles: { label: string; path: string; extra: Partial<Target>; pinned: boolean }[] = [
        { label: 'GET /v1/ping', path: '/v1/ping', extra: {}, pinned: true },
        { label: 'GET /v1/auth/me', path: '/v1/auth/me', extra: { auth: `Bearer ${token}` }, pinned: true },
        // Like the measurement: unpinned, with bcrypt on libuv's threads (their CPU is not in this profile).
        { label: 'POST /v1/auth/login', path: '/v1/auth/login', extra: { method: 'POST' as const, body: loginBody, connections: opts.loginConnections, cpu: null }, pinned: false },
      ];
      for (const { label, path: p, extra, pinned } of profiles) {
        await profileService({
          profileDir,
          start: (nodeFlags) => startOurs(`our service (profiled)`, pinned ? serverCpu : null, nodeFlags),
          load: (profiled) => runWrk({ url: `${profiled.url}${p}`, connections: opts.connections, cpu: wrkCpu, ...extra }, opts.duration),
          heading: (r) => `\nCPU profile of our service under ${label} (${wrkRate(r).toFixed(0)} req/s while profiled; load phase only):`,
        });
      }
    }
  } finally {
    await scratch.cleanup();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
