// Operator endpoints benchmark: requests per second and p50/p99 latency of our service (built,
// started as a child process) over a seeded database (10,000,000 audit events over a year,
// 1,000,000 job runs over 30 days; bench/ops/seed.ts), for
//
//   GET /ops/audit                 first page, unfiltered and with each filter (action exact and
//                                  prefix, actor_id, org_id, target_id, a since/until window)
//   GET /ops/audit/stats           a 30-day window ending at the start of the run
//   GET /ops/jobs/overview
//
// beside GET /v1/ping of the same service, and the first page of GET /ops/audit sent by two bare
// servers with the same SQL (bench/bare: Express 5 + pg, the ceiling of issue 26, and node:http +
// pg), all in the same run with the same wrk settings; then POST /v1/auth/login with audit writes
// ON and OFF.
//
//   npm run bench:ops -- [--audit-events 10000000] [--job-runs 1000000] [--duration 4] [--warmup 1]
//                        [--connections 8] [--rounds 3] [--login-rounds 5] [--login-connections 8]
//                        [--login-users 64] [--no-build] [--no-pin] [--profile]
//
// --profile: afterwards, a CPU profile of our service and of the bare Express server under the
// first page of GET /ops/audit.
//
// Rounds: each round measures every GET target once, in a rotating order; each target's row is its
// median-rate round. Aim: p99 under 50 ms at 8 connections for every operator endpoint.
//
// Login, audit writes ON vs OFF: the service has no switch for audit writes, and gets none for a
// benchmark. For the OFF phases the owner installs a `BEFORE INSERT ON audit_events FOR EACH ROW`
// trigger that returns NULL, and drops it after: the service still runs its INSERT statement, but
// no row is written (no heap tuple, no index entries, no WAL for it). The phases alternate (ON
// first in odd rounds, OFF first in even ones); the overhead is the median of the rounds' ratios
// (--login-rounds: more than the GET targets get, as a few percent is within one round's noise).
// Login uses BCRYPT_COST=4 (the lowest bcrypt allows), so that the database's share shows, with
// every rate limit raised, on an unpinned instance (bcrypt runs on libuv's threads on every core,
// as in bench/http/run.ts), as --login-users seeded users in turn (bench/ops/login.lua).
//
// Load generator and pinning as in bench/http/run.ts: Debian's `wrk` (apt-get install -y wrk),
// each server on CPU 0 and wrk on CPU 1 when the machine has 2+ cores; Postgres and Redis float.
//
// Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; BENCH_DATABASE_URL to change) and
// Redis (REDIS_URL, default redis://127.0.0.1:6379). Creates a scratch database bench_ops_<random>
// and the Redis key prefix bench-ops:<random>:, and removes both (and every child process) at the end.
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { openScratch } from '../scratch';
import { parseOptions } from '../options';
import { cpuMs, cpuPinning, pinByDefault, runForJsonLine, type Server } from '../processes';
import { buildService, profileService, startBareServer, startService, UNLIMITED } from '../service';
import { checkWrk, runMeasured, runWrk, wrkRate, wrkSummary, type MeasuredRow, type MeasuredTarget, type WrkResult } from '../wrk';
import { fmtRate, median, medianRow, rotate } from '../rounds';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { connectionString, createDatabase, migrateLatest } from '../../src/platform/database';
import { appDatabase } from '../../src/platform/database-roles';
import { hashPassword } from '../../src/accounts/passwords';
import { insertUser } from '../../src/accounts/store';
import { createSession } from '../../src/sessions/store';
import { idSql, seed } from './seed';

const AIM_P99_MS = 50;
const BCRYPT_COST = 4;
const LOGIN_PASSWORD = 'bench-password-correct-horse';
const DAY_MS = 24 * 3600 * 1000;

interface Options {
  auditEvents: number;
  jobRuns: number;
  duration: number;
  warmup: number;
  connections: number;
  rounds: number;
  loginRounds: number;
  loginConnections: number;
  loginUsers: number;
  build: boolean;
  pin: boolean;
  profile: boolean;
}

const USAGE =
  'usage: npm run bench:ops -- [--audit-events 10000000] [--job-runs 1000000] [--duration 4] [--warmup 1] [--connections 8] [--rounds 3] [--login-rounds 5] [--login-connections 8] [--login-users 64] [--no-build] [--no-pin] [--profile]';

function parseArgs(argv: string[]): Options {
  const defaults: Options = {
    auditEvents: 10_000_000,
    jobRuns: 1_000_000,
    duration: 4,
    warmup: 1,
    connections: 8,
    rounds: 3,
    loginRounds: 5,
    loginConnections: 8,
    loginUsers: 64,
    build: true,
    pin: pinByDefault(),
    profile: false,
  };
  return parseOptions(argv, defaults, {
    usage: USAGE,
    numbers: {
      '--audit-events': 'auditEvents',
      '--job-runs': 'jobRuns',
      '--duration': 'duration',
      '--warmup': 'warmup',
      '--connections': 'connections',
      '--rounds': 'rounds',
      '--login-rounds': 'loginRounds',
      '--login-connections': 'loginConnections',
      '--login-users': 'loginUsers',
    },
    mayBeZero: ['--warmup'],
    switches: { '--no-build': (o) => (o.build = false), '--no-pin': (o) => (o.pin = false), '--profile': (o) => (o.profile = true) },
  });
}

interface Target extends MeasuredTarget {
  key: string;
  /** Operator endpoints: held to the p99 aim. */
  aim: boolean;
}

type Row = MeasuredRow;

const toRow = (label: string, r: WrkResult, cpuUsedMs: number, pgUsedMs: number): Row => ({
  label,
  ...wrkSummary(r),
  cpuUs: (cpuUsedMs * 1000) / Math.max(1, r.requests),
  pgCpuUs: (pgUsedMs * 1000) / Math.max(1, r.requests),
});

const line = (r: Row, note = '') =>
  `${r.label.padEnd(46)} ${fmtRate(r.rps).padStart(8)} ${r.p50ms.toFixed(2).padStart(8)} ${r.p99ms.toFixed(2).padStart(8)} ${r.cpuUs.toFixed(0).padStart(11)} ${r.pgCpuUs.toFixed(0).padStart(9)}  ${note}${r.errors ? `  (${r.errors} errors or non-2xx!)` : ''}`;
const HEADER = `${'target'.padEnd(46)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'node µs/req'.padStart(11)} ${'pg µs/req'.padStart(9)}`;

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;

/** wrk with bench/ops/login.lua (the users in turn); not pinned, like the instance it loads. */
function runLoginWrk(url: string, connections: number, seconds: number, users: number): Promise<WrkResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', path.join(__dirname, 'login.lua'), url];
  const env = { ...process.env, WRK_REPORT: path.join(__dirname, '../http/report.lua'), LOGIN_USERS: String(users), LOGIN_PASSWORD };
  return runForJsonLine<WrkResult>('wrk', 'wrk', args, { env }, 'WRK_JSON ');
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  if (!checkWrk()) return;
  const cpus = os.cpus().length;
  const { serverCpu, wrkCpu } = cpuPinning(opts.pin);
  const started = performance.now();
  const loadAtStart = os.loadavg()[0]!;

  const mainJs = buildService(opts.build);

  let owner: Knex | null = null;
  const scratch = openScratch('ops', async () => {
    if (owner) await owner.destroy().catch(() => undefined);
  });
  const { id, database, prefix, redisUrl, profileDir } = scratch;
  const sessionSecret = randomBytes(32).toString('base64url');

  try {
    const dbUrl = await scratch.createDatabase();
    const seedConfig = loadConfig({ NODE_ENV: 'test', DATABASE_URL: dbUrl, SESSION_SECRET: sessionSecret });
    // The owner's connection (one: the seed's session settings hold for all its statements).
    owner = createDatabase(dbUrl, 1, createLogger('warn'));
    const db = owner;
    await migrateLatest(db);

    // The operator who makes every ops request (bearer session), and the users who sign in.
    const operatorId = await insertUser(db, { email: `bench-operator-${id}@example.com`, name: 'Bench Operator' });
    await db('users').where({ id: operatorId }).update({ is_operator: true, email_verified_at: db.fn.now() });
    const auth = `Bearer ${(await createSession(db, { userId: operatorId, transport: 'bearer' }, seedConfig.session)).token}`;
    const hash = await hashPassword(LOGIN_PASSWORD, BCRYPT_COST);
    await db.raw(
      `insert into users (id, email, name, password_hash, email_verified_at)
       select ${idSql('usr', `${2 ** 40} + n`)}, 'bench-login-' || n || '@example.com', 'Login user ' || n, ?, now() from generate_series(1, ?) n`,
      [hash, opts.loginUsers],
    );

    console.log(`seeding ${opts.auditEvents.toLocaleString('en')} audit events and ${opts.jobRuns.toLocaleString('en')} job runs (set-based SQL as the owner)…`);
    const seeded = await seed(db, { auditEvents: opts.auditEvents, jobRuns: opts.jobRuns });
    const t = seeded.seconds;
    console.log(
      `seeded in ${t.total.toFixed(1)} s: audit events ${t.auditEvents.toFixed(1)} s (secondary indexes dropped) + their indexes ${t.auditIndexes.toFixed(1)} s, ` +
        `job runs ${t.jobRuns.toFixed(1)} s (plain INSERTs, every index and trigger in place), vacuum + analyze ${t.vacuumAnalyze.toFixed(1)} s`,
    );
    for (const table of seeded.tables) console.log(`    ${table.name.padEnd(14)} ${table.rows.toLocaleString('en').padStart(12)} rows  ${mb(table.bytes).padStart(9)} (pg_total_relation_size)`);

    // Servers: ours pinned like the bare baseline; a second, unpinned instance for login.
    const startOurs = (name: string, cpu: number | null, nodeFlags: string[] = []) =>
      startService(name, {
        mainJs,
        cpu,
        nodeFlags,
        sessionSecret,
        databaseUrl: dbUrl,
        redisUrl,
        redisPrefix: prefix,
        auth,
        env: {
          BCRYPT_COST: String(BCRYPT_COST),
          RATE_LIMIT_LOGIN_PER_MINUTE: UNLIMITED,
          RATE_LIMIT_REGISTER_PER_MINUTE: UNLIMITED,
          RATE_LIMIT_EMAIL_PER_15_MINUTES: UNLIMITED,
          RATE_LIMIT_IP_PER_MINUTE: UNLIMITED,
        },
      });
    const ours = await startOurs('our service', serverCpu);
    const oursLogin = serverCpu === null ? ours : await startOurs('our service (unpinned, for login)', null);
    // After the service's start: the application role exists and has its grants.
    const bareEnv = { BARE_DATABASE_URL: await connectionString(appDatabase(seedConfig, dbUrl)), BARE_POOL_MAX: String(seedConfig.databasePoolMax) };
    const bare = await startBareServer('bare node:http + pg', path.join(__dirname, '../bare/node.ts'), serverCpu, bareEnv);
    const express = await startBareServer('bare Express 5 + pg', path.join(__dirname, '../bare/express.ts'), serverCpu, bareEnv);

    // The measured requests, each checked first against plain SQL as the owner.
    const now = Date.now();
    const until = new Date(now).toISOString();
    const since30 = new Date(now - 30 * DAY_MS).toISOString();
    const windowFrom = new Date(now - 100 * DAY_MS).toISOString();
    const windowTo = new Date(now - 99 * DAY_MS).toISOString();
    const f = seeded.filters;
    const lists: { key: string; label: string; query: string; where: string; values: string[] }[] = [
      { key: 'first', label: 'GET /ops/audit (first page)', query: '', where: 'true', values: [] },
      { key: 'action', label: 'GET /ops/audit?action=auth.login.succeeded', query: 'action=auth.login.succeeded', where: 'action = ?', values: ['auth.login.succeeded'] },
      { key: 'prefix', label: 'GET /ops/audit?action=org.*', query: 'action=org.*', where: "action like 'org.%'", values: [] },
      { key: 'actor', label: 'GET /ops/audit?actor_id=…', query: `actor_id=${f.actorId}`, where: 'actor_id = ?', values: [f.actorId] },
      { key: 'org', label: 'GET /ops/audit?org_id=…', query: `org_id=${f.orgId}`, where: 'org_id = ?', values: [f.orgId] },
      { key: 'target', label: 'GET /ops/audit?target_id=…', query: `target_id=${f.targetId}`, where: 'target_id = ?', values: [f.targetId] },
      { key: 'window', label: 'GET /ops/audit?since=…&until=… (a day)', query: `since=${windowFrom}&until=${windowTo}`, where: 'at >= ? and at < ?', values: [windowFrom, windowTo] },
    ];
    const get = async (server: Server, p: string) => {
      const res = await fetch(`${server.url}${p}`, { headers: { Authorization: auth } });
      const body: any = await res.json();
      if (res.status !== 200) throw new Error(`${server.name} GET ${p} answered ${res.status}: ${JSON.stringify(body)}`);
      return body;
    };
    const matches: string[] = [];
    for (const l of lists) {
      const body = await get(ours, `/ops/audit?${l.query}`);
      const want = (await db.raw(`select id from audit_events where ${l.where} order by at desc, id desc limit 50`, l.values)).rows.map((r: { id: string }) => r.id);
      const total = Number((await db.raw(`select count(*) as n from audit_events where ${l.where}`, l.values)).rows[0].n);
      if (JSON.stringify(body.items.map((e: { id: string }) => e.id)) !== JSON.stringify(want)) throw new Error(`${l.label}: the page is not the 50 newest matching events`);
      if (l.key === 'first') {
        for (const baseline of [bare, express]) {
          if (JSON.stringify(await get(baseline, '/ops/audit')) !== JSON.stringify(body)) throw new Error(`${l.label}: ${baseline.name} answers another body`);
        }
      }
      matches.push(`${l.key} ${total.toLocaleString('en')}`);
    }
    const statsPath = `/ops/audit/stats?since=${since30}&until=${until}`;
    const coldStart = performance.now();
    const stats = await get(ours, statsPath);
    const coldMs = performance.now() - coldStart;
    const plainTotal = Number((await db.raw('select count(*) as n from audit_events where at >= ? and at < ?', [since30, until])).rows[0].n);
    if (stats.total !== plainTotal || stats.by_day.reduce((n: number, d: { count: number }) => n + d.count, 0) !== plainTotal) {
      throw new Error(`stats over 30 days: total ${stats.total}, plain count ${plainTotal}`);
    }
    const warmStart = performance.now();
    await get(ours, statsPath);
    const warmMs = performance.now() - warmStart;
    await get(ours, '/ops/jobs/overview');

    console.log(
      `\nops benchmark: node ${process.version}, ${cpus} CPUs (${os.cpus()[0]?.model ?? '?'}, load average ${loadAtStart.toFixed(1)} before the run), wrk -t1 -c${opts.connections}, ` +
        `warm-up ${opts.warmup} s, ${opts.duration} s × ${opts.rounds} round(s) (median), ` +
        (opts.pin ? 'servers pinned to CPU 0, wrk to CPU 1 (Postgres floats)' : 'no CPU pinning') +
        `\nour service: node dist/src/main.js serve, NODE_ENV=production, RUN_WORKERS=false, LOG_LEVEL=warn, DATABASE_POOL_MAX=${seedConfig.databasePoolMax}, rate limits raised; scratch database ${database}` +
        `\nevery list answer checked against plain SQL (the 50 newest matching events); matching events per filter: ${matches.join(', ')}` +
        `\nstats over 30 days: ${plainTotal.toLocaleString('en')} events (= a plain count); the first request filled the rollups in ${coldMs.toFixed(0)} ms, the second took ${warmMs.toFixed(1)} ms`,
    );

    const target = (key: string, label: string, server: Server, p: string, aim: boolean): Target => ({
      key,
      label,
      url: `${server.url}${p}`,
      auth,
      connections: opts.connections,
      cpu: wrkCpu,
      pid: server.child.pid!, // taskset execs the command: the same pid
      aim,
    });
    const targets: Target[] = [
      target('bare', 'bare node:http + pg GET /ops/audit (first page)', bare, '/ops/audit', false),
      target('express', 'bare Express 5 + pg GET /ops/audit (first page)', express, '/ops/audit', false),
      target('ping', 'ours GET /v1/ping', ours, '/v1/ping', false),
      ...lists.map((l) => target(l.key, l.label, ours, `/ops/audit${l.query ? `?${l.query}` : ''}`, true)),
      target('stats', 'GET /ops/audit/stats (30 days)', ours, statsPath, true),
      target('overview', 'GET /ops/jobs/overview', ours, '/ops/jobs/overview', true),
    ];
    const measure = (tg: Target): Promise<Row> => runMeasured(tg, opts.duration, scratch.postgresCpu);

    if (opts.warmup > 0) {
      console.log(`warm-up: ${opts.warmup} s each`);
      for (const tg of targets) await runWrk(tg, opts.warmup);
    }
    const rows = new Map<string, Row[]>(targets.map((tg) => [tg.key, []]));
    for (let round = 1; round <= opts.rounds; round++) {
      console.log(`round ${round}/${opts.rounds}:`);
      for (const tg of rotate(targets, round - 1)) {
        const row = await measure(tg);
        rows.get(tg.key)!.push(row);
        console.log(`    ${line(row)}`);
      }
    }

    // Login, audit writes ON and OFF.
    await db.raw('create function bench_audit_off() returns trigger language plpgsql as $$ begin return null; end $$');
    const setAudit = async (on: boolean) => {
      await db.raw('drop trigger if exists bench_audit_off on audit_events');
      if (!on) await db.raw('create trigger bench_audit_off before insert on audit_events for each row execute function bench_audit_off()');
    };
    const logins = async () => Number((await db.raw("select count(*) as n from audit_events where action = 'auth.login.succeeded' and at > ?", [until])).rows[0].n);
    const loginUrl = `${oursLogin.url}/v1/auth/login`;
    const probe = await fetch(loginUrl, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email: 'bench-login-1@example.com', password: LOGIN_PASSWORD, transport: 'bearer' }) });
    if (probe.status !== 200) throw new Error(`POST /v1/auth/login answered ${probe.status}: ${await probe.text()}`);
    const loginRows = { on: [] as Row[], off: [] as Row[] };
    const written = { on: 0, off: 0 };
    const overhead: number[] = [];
    console.log(`\nPOST /v1/auth/login, ${opts.loginUsers} users in turn, -c${opts.loginConnections}, BCRYPT_COST=${BCRYPT_COST}: audit writes ON, and OFF (a BEFORE INSERT trigger returns NULL: the INSERT statement still runs, the row is not written)`);
    // A whole phase's length: the first phase after the GET rounds ran measurably slower after a 1 s warm-up.
    if (opts.warmup > 0) await runLoginWrk(loginUrl, opts.loginConnections, Math.max(opts.warmup, opts.duration), opts.loginUsers);
    try {
      for (let round = 1; round <= opts.loginRounds; round++) {
        console.log(`round ${round}/${opts.loginRounds}:`);
        const got: Partial<Record<'on' | 'off', Row>> = {};
        for (const phase of round % 2 === 1 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
          await setAudit(phase === 'on');
          const before = { events: await logins(), cpu: cpuMs(oursLogin.child.pid!, 0), postgres: await scratch.postgresCpu() };
          const r = await runLoginWrk(loginUrl, opts.loginConnections, opts.duration, opts.loginUsers);
          const row = toRow(`ours POST /v1/auth/login, audit ${phase.toUpperCase()}`, r, cpuMs(oursLogin.child.pid!, 0) - before.cpu, await before.postgres());
          written[phase] += (await logins()) - before.events;
          loginRows[phase].push(row);
          got[phase] = row;
          console.log(`    ${line(row)}`);
        }
        overhead.push(1 - got.on!.rps / got.off!.rps);
      }
    } finally {
      await setAudit(true);
      await db.raw('drop function bench_audit_off()');
    }

    // -----------------------------------------------------------------------------------------
    const r = (key: string) => medianRow(rows.get(key)!);
    console.log(`\nmedian of ${opts.rounds} round(s) of ${opts.duration} s, ${opts.connections} connections:\n${HEADER}\n${'-'.repeat(HEADER.length)}`);
    const vsExpress = median(rows.get('first')!.map((row, i) => row.rps / rows.get('express')![i]!.rps));
    for (const tg of targets) {
      const note = tg.key === 'express' ? 'the ceiling' : tg.key === 'first' ? `${vsExpress.toFixed(2)}× the ceiling; ` : '';
      console.log(line(r(tg.key), tg.aim ? `${note}p99 ${r(tg.key).p99ms < AIM_P99_MS ? '<' : '≥'} ${AIM_P99_MS} ms` : note || 'baseline'));
    }
    const on = medianRow(loginRows.on);
    const off = medianRow(loginRows.off);
    console.log(`\nlogin, ${opts.loginConnections} connections (median of ${opts.loginRounds} round(s) each):\n${HEADER}\n${'-'.repeat(HEADER.length)}`);
    console.log(line(on, `${written.on.toLocaleString('en')} auth.login.succeeded events written`));
    console.log(line(off, `${written.off.toLocaleString('en')} written (the INSERT ran, the trigger dropped the row)`));
    for (const [key, list] of [...rows, ['login ON', loginRows.on], ['login OFF', loginRows.off]] as [string, Row[]][]) {
      const errors = list.reduce((n, row) => n + row.errors, 0);
      if (errors > 0) console.log(`WARNING: ${key}: ${errors} socket errors or non-2xx answers over the rounds`);
    }

    const { rows: rollups } = await db.raw(
      `select t as name, (select count(*) from audit_rollup_counts) as counts, (select count(*) from audit_rollup_buckets) as buckets, pg_total_relation_size(t) as bytes
       from unnest(array['audit_rollup_buckets', 'audit_rollup_counts']) t`,
    );
    console.log(
      `\nrollups after the run: ${rollups[0].buckets} buckets, ${rollups[0].counts} count rows; ` + rollups.map((x: { name: string; bytes: number }) => `${x.name} ${mb(Number(x.bytes))}`).join(', '),
    );

    const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
    console.log(`\naims (${opts.connections} connections):`);
    for (const tg of targets.filter((x) => x.aim)) {
      const p99 = r(tg.key).p99ms;
      console.log(`  ${verdict(p99 < AIM_P99_MS)}  p99 < ${AIM_P99_MS} ms  ${tg.label.padEnd(46)} ${p99.toFixed(2)} ms`);
    }
    const first = r('first');
    const ceiling = r('express');
    console.log(
      `  ${verdict(vsExpress >= 0.9)}  GET /ops/audit first page ≥ 0.9× bare Express + pg (issue 26): ${vsExpress.toFixed(2)}×; ` +
        `${verdict(first.p99ms <= 1.5 * ceiling.p99ms)}  p99 ≤ 1.5× its: ${first.p99ms.toFixed(2)} vs ${ceiling.p99ms.toFixed(2)} ms; CPU per request ${(first.cpuUs / ceiling.cpuUs).toFixed(2)}× its`,
    );
    console.log(
      `  login overhead of audit writes: ${(median(overhead) * 100).toFixed(1)}% of the throughput (median of the rounds' ratios: ${overhead.map((o) => `${(o * 100).toFixed(1)}%`).join(', ')}); ` +
        `p50 ${on.p50ms.toFixed(2)} vs ${off.p50ms.toFixed(2)} ms, p99 ${on.p99ms.toFixed(2)} vs ${off.p99ms.toFixed(2)} ms (ON vs OFF)`,
    );
    if (loadAtStart > 0.5 * cpus) console.log(`  note: load average ${loadAtStart.toFixed(1)} on ${cpus} CPUs before the run — other processes were busy; rerun on a quiet machine for absolute numbers`);

    if (opts.profile) {
      // Where the CPU goes under the first page: a fresh instance of ours and of the bare Express
      // server with --cpu-prof, pinned like the measured ones; only the load phase is summarised.
      const sides = [
        { name: 'our service', start: (nodeFlags: string[]) => startOurs('our service (profiled)', serverCpu, nodeFlags) },
        { name: 'bare Express 5 + pg', start: (nodeFlags: string[]) => startBareServer('bare Express 5 + pg (profiled)', path.join(__dirname, '../bare/express.ts'), serverCpu, bareEnv, nodeFlags) },
      ];
      for (const side of sides) {
        const at = (profiled: Server): Target => target('profiled', side.name, profiled, '/ops/audit', false);
        await profileService({
          profileDir,
          start: side.start,
          warmUp: (profiled) => runWrk(at(profiled), 1),
          load: (profiled) => runWrk(at(profiled), opts.duration),
          heading: (res) => `\nCPU profile of ${side.name} under GET /ops/audit (first page) (${wrkRate(res).toFixed(0)} req/s while profiled; load phase only):`,
        });
      }
    }
    console.log(`\ntotal run time ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await scratch.cleanup();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
