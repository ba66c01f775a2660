// The production topology under mixed traffic, beside one instance connected directly, in the
// same run (issue 23, item 5):
//
//   topology: wrk → haproxy (Debian's, health checks on /readyz) → 3 API instances (RUN_WORKERS=false)
//             2 worker processes; PgBouncer (transaction mode) before PostgreSQL; Redis primary +
//             replica + 3 Sentinels
//   direct:   wrk → 1 instance (`serve`, its job workers inside) → PostgreSQL, Redis
//
//   npm run bench:topology -- [--seconds 60] [--rounds 2] [--warmup 5] [--connections 32]
//                             [--users 16] [--apis 3] [--workers 2] [--pool 20]
//                             [--no-pooler] [--no-sentinel] [--no-build] [--source]
//
// The traffic (bench/topology/mixed.lua, one list of requests sent round and round): sign-in
// (POST /v1/auth/login), GET /v1/auth/me, the caller's organisation list and one organisation's
// project list, project and organisation creation, operator reads (GET /ops/jobs/overview,
// GET /ops/audit) and operator test mails (POST /ops/mail/test, sent by the workers with the log
// transport). --users seeded accounts (one an operator), each with an organisation and projects.
// Passwords at BCRYPT_COST=4 (bcrypt's lowest), so sign-ins do not hide everything else; every rate
// limit raised (all traffic comes from 127.0.0.1).
//
// Each target gets --seconds of load in all, split over --rounds runs in alternating order
// (drift of the machine's load touches both alike); a target's row adds its runs up. After the
// load, every test mail of each deployment must be sent: the runs still waiting are reported.
//
// Load generator: Debian's `wrk` (apt-get install -y wrk), one thread, in its own process. No CPU
// pinning: the topology is a dozen processes on the machine's cores, as it would be on one host.
// With --no-pooler / --no-sentinel the topology connects to PostgreSQL / the local Redis
// directly (the parts are started by bench/topology/parts.ts, one function each).
//
// Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; BENCH_DATABASE_URL to change), Redis
// (REDIS_URL, default redis://127.0.0.1:6379), /usr/sbin/haproxy, /usr/sbin/pgbouncer and
// redis-server/redis-sentinel. Creates two scratch databases (bench_topology_<random> and its
// _direct twin) and the Redis key prefix bench-topology:<random>:, and removes them (and every
// child process) at the end.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openScratch, adminUrl } from '../scratch';
import { parseOptions } from '../options';
import { cpuMs, runForJsonLine, type Server } from '../processes';
import { buildService, startService, type ServiceOptions, UNLIMITED } from '../service';
import { checkWrk, wrkSummary, type WrkResult } from '../wrk';
import { fmtRate } from '../rounds';
import { loadConfig, projectRoot } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createDatabase, migrateLatest } from '../../src/platform/database';
import { insertUser } from '../../src/accounts/store';
import { hashPassword } from '../../src/accounts/passwords';
import { createSession } from '../../src/sessions/store';
import type { Haproxy } from '../../test/support/haproxy';
import { startApis, startBalancer, startPooler, startSentinelRedis, startWorkers, type Part } from './parts';

const BCRYPT_COST = 4;
const PASSWORD = 'bench-password-correct-horse';
const MIXED_LUA = path.join(__dirname, 'mixed.lua');
/** How long the test mails of a deployment may take to be sent once the load stops. */
const MAIL_DRAIN_MS = 60_000;

interface Options {
  seconds: number;
  rounds: number;
  warmup: number;
  connections: number;
  users: number;
  apis: number;
  workers: number;
  pool: number;
  pooler: boolean;
  sentinel: boolean;
  build: boolean;
  source: boolean;
}

const USAGE =
  'usage: npm run bench:topology -- [--seconds 60] [--rounds 2] [--warmup 5] [--connections 32] [--users 16] [--apis 3] [--workers 2] [--pool 20] [--no-pooler] [--no-sentinel] [--no-build] [--source]';

function parseArgs(argv: string[]): Options {
  const defaults: Options = { seconds: 60, rounds: 2, warmup: 5, connections: 32, users: 16, apis: 3, workers: 2, pool: 20, pooler: true, sentinel: true, build: true, source: false };
  return parseOptions(argv, defaults, {
    usage: USAGE,
    numbers: {
      '--seconds': 'seconds',
      '--rounds': 'rounds',
      '--warmup': 'warmup',
      '--connections': 'connections',
      '--users': 'users',
      '--apis': 'apis',
      '--workers': 'workers',
      '--pool': 'pool',
    },
    mayBeZero: ['--warmup'],
    switches: {
      '--no-pooler': (o) => (o.pooler = false),
      '--no-sentinel': (o) => (o.sentinel = false),
      '--no-build': (o) => (o.build = false),
      // src/main.ts through tsx instead of dist/: for a checkout whose build is broken elsewhere.
      '--source': (o) => (o.source = true),
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Seed data and the request list

interface Account {
  email: string;
  token: string;
  orgId?: string;
}

/** `count` verified accounts with a bearer session each, the first an operator; straight into the database. */
async function seedAccounts(databaseUrl: string, count: number, tag: string): Promise<Account[]> {
  const db = createDatabase(databaseUrl, 2, createLogger('warn'));
  const session = loadConfig({ NODE_ENV: 'test', DATABASE_URL: databaseUrl }).session;
  try {
    await migrateLatest(db);
    const passwordHash = await hashPassword(PASSWORD, BCRYPT_COST);
    const accounts: Account[] = [];
    for (let i = 0; i < count; i++) {
      const email = `bench-${tag}-${i}@example.com`;
      const userId = await insertUser(db, { email, name: `Bench User ${i}`, passwordHash });
      await db('users').where({ id: userId }).update({ email_verified_at: new Date(), is_operator: i === 0 });
      accounts.push({ email, token: (await createSession(db, { userId, transport: 'bearer' }, session)).token });
    }
    return accounts;
  } finally {
    await db.destroy();
  }
}

/** Through the service itself: an organisation per account, with a few projects. */
async function seedOrgs(baseUrl: string, accounts: Account[]): Promise<void> {
  const post = async (account: Account, p: string, body: unknown) => {
    const res = await fetch(`${baseUrl}${p}`, { method: 'POST', headers: { Authorization: `Bearer ${account.token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`seeding: POST ${p} answered ${res.status}: ${await res.text()}`);
    return res.json() as Promise<{ id: string }>;
  };
  for (const [i, account] of accounts.entries()) {
    account.orgId = (await post(account, '/v1/orgs', { name: `Bench Org ${i}` })).id;
    for (let p = 0; p < 5; p++) await post(account, `/v1/orgs/${account.orgId}/projects`, { name: `Seed project ${p}` });
  }
}

/** The list mixed.lua sends: per account, one sign-in, reads and writes of its own, and operator work. */
function requestLines(accounts: Account[]): string[] {
  const operator = `Bearer ${accounts[0]!.token}`;
  return accounts.flatMap((a) => {
    const auth = `Bearer ${a.token}`;
    const line = (method: string, p: string, authorization: string, body?: unknown) => [method, p, authorization, body === undefined ? '-' : JSON.stringify(body)].join('\t');
    return [
      line('POST', '/v1/auth/login', '-', { email: a.email, password: PASSWORD, transport: 'bearer' }),
      line('GET', '/v1/auth/me', auth),
      line('GET', '/v1/orgs?limit=20', auth),
      line('GET', `/v1/orgs/${a.orgId}/projects?limit=20`, auth),
      line('POST', `/v1/orgs/${a.orgId}/projects`, auth, { name: 'Project {n}' }),
      line('GET', '/v1/auth/me', auth),
      line('GET', '/ops/jobs/overview', operator),
      line('POST', '/v1/orgs', auth, { name: 'Org {n}' }),
      line('GET', `/v1/orgs/${a.orgId}/projects?limit=20`, auth),
      line('GET', '/ops/audit?limit=20', operator),
      line('POST', '/ops/mail/test', operator, { to: 'bench-mail-{n}@example.com' }),
      line('GET', '/v1/auth/me', auth),
    ];
  });
}

// ---------------------------------------------------------------------------------------------
// Load

type MixedResult = WrkResult & { statuses: Record<string, number> };

function runMixed(url: string, requestsFile: string, connections: number, seconds: number): Promise<MixedResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', MIXED_LUA, url];
  const env = { ...process.env, WRK_REQUESTS: requestsFile, WRK_NONCE: randomBytes(3).toString('hex') };
  return runForJsonLine<MixedResult>('wrk', 'wrk', args, { env }, 'WRK_JSON ');
}

interface Target {
  label: string;
  url: string;
  requestsFile: string;
  /** The service's processes, by role: their CPU time per request is reported. */
  processes: Record<string, Server[]>;
  databaseUrl: string;
  runs: { r: MixedResult; cpuMs: Record<string, number> }[];
}

async function measure(t: Target, seconds: number, connections: number): Promise<MixedResult> {
  const cpu = () => Object.fromEntries(Object.entries(t.processes).map(([role, ps]) => [role, ps.reduce((sum, p) => sum + cpuMs(p.child.pid!, 0), 0)]));
  const before = cpu();
  const r = await runMixed(t.url, t.requestsFile, connections, seconds);
  const after = cpu();
  t.runs.push({ r, cpuMs: Object.fromEntries(Object.keys(after).map((role) => [role, after[role]! - before[role]!])) });
  return r;
}

/** A target's runs added up: the rate over their whole time, p50 of the run at the median rate, p99 of the worst run. */
function summarise(t: Target) {
  const rows = t.runs.map(({ r }) => ({ ...wrkSummary(r), statuses: r.statuses, r }));
  const requests = rows.reduce((n, row) => n + row.requests, 0);
  const seconds = t.runs.reduce((n, { r }) => n + r.duration_us / 1e6, 0);
  const mid = [...rows].sort((a, b) => a.rps - b.rps)[Math.floor((rows.length - 1) / 2)]!;
  const statuses: Record<string, number> = {};
  for (const row of rows) for (const [s, n] of Object.entries(row.statuses)) statuses[s] = (statuses[s] ?? 0) + n;
  const socketErrors = rows.reduce((n, row) => n + row.r.errors.connect + row.r.errors.read + row.r.errors.write + row.r.errors.timeout, 0);
  return {
    requests,
    rps: requests / seconds,
    p50ms: mid.p50ms,
    p99ms: Math.max(...rows.map((row) => row.p99ms)),
    /** CPU time per request of each role's node processes, in µs. */
    cpuUs: Object.fromEntries(Object.keys(t.processes).map((role) => [role, (t.runs.reduce((n, run) => n + run.cpuMs[role]!, 0) * 1000) / Math.max(1, requests)])),
    statuses,
    socketErrors,
  };
}

/** Test-mail runs of a deployment not finished `MAIL_DRAIN_MS` after the load (they should all be sent). */
async function mailBacklog(databaseUrl: string): Promise<{ total: number; byState: Record<string, number> }> {
  const db = createDatabase(databaseUrl, 1, createLogger('warn'));
  try {
    const deadline = Date.now() + MAIL_DRAIN_MS;
    for (;;) {
      const rows: { state: string; n: string }[] = await db('job_runs').where({ kind: 'service.mail.send' }).groupBy('state').select('state', db.raw('count(*) as n'));
      const byState = Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
      const waiting = rows.filter((r) => r.state !== 'completed').reduce((n, r) => n + Number(r.n), 0);
      if (waiting === 0 || Date.now() > deadline) return { total: rows.reduce((n, r) => n + Number(r.n), 0), byState };
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    await db.destroy();
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  if (!checkWrk()) return;
  const mainJs = opts.source ? path.join(projectRoot, 'src/main.ts') : buildService(opts.build);
  const nodeFlags = opts.source ? ['--import', 'tsx'] : [];

  const parts: Part[] = [];
  let proxy: Haproxy | null = null;
  let directDatabase: string | null = null;
  const scratch = openScratch('topology', async () => {
    await proxy?.stop();
    for (const part of parts) await part.stop();
    if (directDatabase) await scratch.admin.raw(`drop database if exists "${directDatabase}" with (force)`);
  });
  const finish = async () => {
    await scratch.cleanup();
    for (const part of parts) await part.afterDrop?.();
  };
  // Bounded: whatever hangs, the run ends (and cleans up) within this.
  const budgetMs = (2 * (opts.seconds + opts.warmup) + 300) * 1000 + MAIL_DRAIN_MS * 2;
  const watchdog = setTimeout(() => {
    console.error(`the benchmark took longer than ${budgetMs / 1000} s: stopping`);
    finish().finally(() => process.exit(1));
  }, budgetMs);
  watchdog.unref();

  try {
    const { id, database, prefix, redisUrl } = scratch;
    const topologyDbUrl = await scratch.createDatabase();
    directDatabase = `${database}_direct`;
    await scratch.admin.raw(`create database "${directDatabase}"`);
    const directDbUrl = adminUrl(directDatabase);
    const [topologyAccounts, directAccounts] = [await seedAccounts(topologyDbUrl, opts.users, `${id}t`), await seedAccounts(directDbUrl, opts.users, `${id}d`)];

    const common = {
      mainJs,
      nodeFlags,
      cpu: null,
      sessionSecret: randomBytes(32).toString('base64url'),
      env: {
        BCRYPT_COST: String(BCRYPT_COST),
        RATE_LIMIT_LOGIN_PER_MINUTE: UNLIMITED,
        RATE_LIMIT_REGISTER_PER_MINUTE: UNLIMITED,
        RATE_LIMIT_EMAIL_PER_15_MINUTES: UNLIMITED,
        RATE_LIMIT_IP_PER_MINUTE: '0',
      },
    };

    // One instance on PostgreSQL and Redis directly, its job workers inside (the default deploy).
    const direct = await startService('direct instance', {
      ...common,
      databaseUrl: directDbUrl,
      redisUrl,
      redisPrefix: `${prefix}direct:`,
      auth: `Bearer ${directAccounts[0]!.token}`,
      env: { ...common.env, RUN_WORKERS: 'true' },
    });

    // The topology, part by part.
    const pooler = opts.pooler ? await startPooler(database, opts.pool) : null;
    if (pooler) parts.push(pooler);
    const sentinel = opts.sentinel ? await startSentinelRedis() : null;
    if (sentinel) parts.push(sentinel);
    const topology: ServiceOptions = {
      ...common,
      databaseUrl: topologyDbUrl,
      redisUrl: sentinel ? '' : redisUrl, // with Sentinel, REDIS_URL comes from its part
      redisPrefix: `${prefix}topology:`,
      auth: `Bearer ${topologyAccounts[0]!.token}`,
      env: { ...common.env, ...pooler?.env, ...sentinel?.env },
    };
    const apis = await startApis(opts.apis, topology);
    const workers = await startWorkers(opts.workers, topology);
    proxy = await startBalancer(apis);

    await seedOrgs(direct.url, directAccounts);
    await seedOrgs(proxy.url, topologyAccounts);
    const listFile = (name: string, accounts: Account[]) => {
      const file = path.join(scratch.profileDir, `${name}.requests`);
      fs.writeFileSync(file, `${requestLines(accounts).join('\n')}\n`);
      return file;
    };
    const targets: Target[] = [
      { label: 'direct: 1 instance', url: direct.url, requestsFile: listFile('direct', directAccounts), processes: { instance: [direct] }, databaseUrl: directDbUrl, runs: [] },
      {
        label: `topology: haproxy → ${opts.apis} instances`,
        url: proxy.url,
        requestsFile: listFile('topology', topologyAccounts),
        processes: { 'API instances': apis, workers },
        databaseUrl: topologyDbUrl,
        runs: [],
      },
    ];

    console.log(
      `\nTopology benchmark: node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}, load average ${os.loadavg()[0]!.toFixed(1)}), ` +
        `wrk -t1 -c${opts.connections}, mixed traffic (bench/topology/mixed.lua, ${opts.users} accounts), ${opts.seconds} s per target in ${opts.rounds} run(s), warm-up ${opts.warmup} s\n` +
        `  direct:   1 instance (RUN_WORKERS=true), PostgreSQL and Redis directly\n` +
        `  topology: haproxy ${proxy.url} → ${opts.apis} instances (RUN_WORKERS=false), ${opts.workers} worker processes\n` +
        `            ${pooler?.label ?? 'PostgreSQL directly (--no-pooler)'}\n` +
        `            ${sentinel?.label ?? `Redis ${redisUrl} directly (--no-sentinel)`}\n` +
        `  service:  ${opts.source ? 'src/main.ts through tsx' : 'dist/src/main.js'}, NODE_ENV=production, LOG_LEVEL=warn, BCRYPT_COST=${BCRYPT_COST}, rate limits raised, mail to the log transport\n`,
    );

    if (opts.warmup > 0) for (const t of targets) await runMixed(t.url, t.requestsFile, opts.connections, opts.warmup);
    const perRun = Math.max(1, Math.round(opts.seconds / opts.rounds));
    for (let round = 0; round < opts.rounds; round++) {
      for (const t of round % 2 === 0 ? targets : [...targets].reverse()) {
        const r = wrkSummary(await measure(t, perRun, opts.connections));
        console.log(`  run ${round + 1}/${opts.rounds} ${t.label.padEnd(32)} ${fmtRate(r.rps).padStart(7)} req/s  p50 ${r.p50ms.toFixed(1)} ms  p99 ${r.p99ms.toFixed(1)} ms  errors ${r.errors}`);
      }
    }
    const shares = (await proxy.servers()).map((s) => `${s.svname} ${['1xx', '2xx', '3xx', '4xx', '5xx', 'other'].reduce((n, c) => n + Number(s[`hrsp_${c}`] ?? 0), 0)}`);

    const header = `${'target'.padEnd(34)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'node CPU µs/req'.padStart(16)}  ${'errors'.padStart(7)}  answers other than 2xx / socket errors`;
    console.log(`\n${header}\n${'-'.repeat(header.length)}`);
    const summaries = targets.map((t) => ({ t, s: summarise(t) }));
    for (const { t, s } of summaries) {
      const non2xx = Object.values(s.statuses).reduce((n, c) => n + c, 0);
      const detail = [Object.entries(s.statuses).map(([status, n]) => `${n}× ${status}`).join(', '), s.socketErrors ? `${s.socketErrors} socket errors` : ''].filter(Boolean).join('; ') || 'none';
      console.log(`${t.label.padEnd(34)} ${fmtRate(s.rps).padStart(8)} ${s.p50ms.toFixed(1).padStart(8)} ${s.p99ms.toFixed(1).padStart(8)} ${Object.values(s.cpuUs).reduce((a, b) => a + b, 0).toFixed(0).padStart(16)}  ${String(non2xx + s.socketErrors).padStart(7)}  ${detail}`);
    }
    const [d, topo] = summaries.map(({ s }) => s);
    console.log(`\ntopology / direct: ${(topo!.rps / d!.rps).toFixed(2)}× the requests per second, p99 ${(topo!.p99ms / d!.p99ms).toFixed(2)}× (p99: the worst run's)`);
    console.log(`answers per instance (haproxy): ${shares.join(', ')}`);
    for (const { t, s } of summaries) console.log(`node CPU per request, ${t.label}: ${Object.entries(s.cpuUs).map(([role, us]) => `${role} ${us.toFixed(0)} µs`).join(', ')}`);
    for (const t of targets) {
      const mail = await mailBacklog(t.databaseUrl);
      const left = mail.total - (mail.byState.completed ?? 0);
      console.log(`test mails, ${t.label}: ${mail.total} queued, ${mail.byState.completed ?? 0} sent${left ? `, ${left} NOT sent ${MAIL_DRAIN_MS / 1000} s after the load: ${JSON.stringify(mail.byState)}` : ''}`);
    }
    const loadNow = os.loadavg()[0]!;
    if (loadNow > os.cpus().length) console.log(`note: load average ${loadNow.toFixed(1)} on ${os.cpus().length} CPUs: other processes competed for the CPU`);
  } finally {
    clearTimeout(watchdog);
    await finish();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
