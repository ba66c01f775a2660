// Organisations benchmark: requests per second and p50/p99 latency of our service (built, started
// as a child process) for
//
//   GET /v1/orgs/{orgId}/projects            first page (50, the default limit)
//   GET /v1/orgs/{orgId}/projects?cursor=…   page 50 (the cursor after 49 pages of 50)
//   GET /v1/orgs                             as a user who belongs to 1,000 organisations
//   GET /v1/orgs/{orgId}
//
// over a seeded database (10,000 organisations of 100 projects; the 10 largest with 2,600
// projects and 50 members), with row-level security on (normal) and off (the owner disables it
// on the four tenant tables and re-enables it after), beside two bare baselines sending the same
// SQL with node-pg, same pool size, same role (bench/bare: one on Express 5 — the ceiling of
// issue 26 — and one on node:http, which shows what Express itself costs) and GET /v1/auth/me of
// the same service — all in the same run, with the same wrk settings.
//
//   npm run bench:orgs -- [--duration 4] [--warmup 1] [--connections 32] [--rounds 3]
//                         [--no-build] [--no-pin] [--no-sql-times] [--profile] [--apply-sql file.sql]
//                         [--only first,deep,orgs,org]
//
// Rounds: each round measures every target once (RLS on: ours + baseline + /me; RLS off: ours),
// in a rotating order, the two phases alternating which goes first. Ratios (list vs /me, RLS off
// vs on) are the median of the per-round ratios; each target's row is its median-rate round.
//
// The caller of every measured request is the bench user, who belongs to 1,000 organisations
// (the largest ones among them): the heaviest case for the policies, whose helper collects the
// acting user's organisation ids. "SQL time" (after the load) also runs the same statements
// serially for a typical member (10 organisations), to show how the policies' cost scales.
//
// --profile: afterwards, a CPU profile of the service and of the bare Express server under each
// measured GET (RLS on). --only: measure only these routes (page 1, page 50, the org list, one org).
// --apply-sql: runs a SQL file as the owner on the scratch database after seeding, to try a schema
// change; the report then says it is not the shipped schema.
//
// Load generator and pinning as in bench/http/run.ts: Debian's `wrk` (apt-get install -y wrk),
// each server on CPU 0 and wrk on CPU 1 when the machine has 2+ cores; Postgres and Redis float.
//
// Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; BENCH_DATABASE_URL to change) and
// Redis (REDIS_URL, default redis://127.0.0.1:6379). Creates a scratch database bench_orgs_<random>
// and the Redis key prefix bench-orgs:<random>:, and removes both (and every child process) at the end.
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import pg from 'pg';
import { openScratch } from '../scratch';
import { parseOptions } from '../options';
import { cpuMs, cpuPinning, pinByDefault, type Server } from '../processes';
import { buildService, profileService, startBareServer, startService, UNLIMITED } from '../service';
import { checkWrk, runWrk, wrkRate, wrkSummary, type WrkTarget } from '../wrk';
import { fmtRate, median, medianRow, rotate } from '../rounds';
import { loadConfig, projectRoot } from '../../src/config';
import { createLogger } from '../../src/logger';
import { connectionString, createDatabase, migrateLatest } from '../../src/platform/database';
import { appDatabase } from '../../src/platform/database-roles';
import { insertUser } from '../../src/accounts/store';
import { createSession } from '../../src/sessions/store';
import { encodeCursor } from '../../src/pagination';
import { seed, type Seeded } from './seed';
import { ENTER_ORG, LIST_ORGS, LIST_PROJECTS, LIST_PROJECTS_AS_MEMBER, SET_CONTEXT } from './sql';

// Issue 26: ≥ 0.9× the bare Express 5 + pg server's req/s, p99 ≤ 1.5× its p99; row-level security under 10 %.
const AIMS = { vsExpress: 0.9, p99VsExpress: 1.5, rlsCost: 0.1 };
const PAGE = 50; // the default limit
const DEEP_PAGE = 50;
const TENANT_TABLES = ['organisations', 'memberships', 'invitations', 'projects'];

interface Options {
  duration: number;
  warmup: number;
  connections: number;
  rounds: number;
  build: boolean;
  pin: boolean;
  sqlTimes: boolean;
  profile: boolean;
  applySql: string | null;
  /** Only these routes (first, deep, orgs, org); all when null. */
  only: string[] | null;
}

const USAGE = 'usage: npm run bench:orgs -- [--duration 4] [--warmup 1] [--connections 32] [--rounds 3] [--no-build] [--no-pin] [--no-sql-times] [--profile] [--apply-sql file.sql] [--only first,deep,orgs,org]';

function parseArgs(argv: string[]): Options {
  const defaults: Options = { duration: 4, warmup: 1, connections: 32, rounds: 3, build: true, pin: pinByDefault(), sqlTimes: true, profile: false, applySql: null, only: null };
  return parseOptions(argv, defaults, {
    usage: USAGE,
    numbers: { '--duration': 'duration', '--warmup': 'warmup', '--connections': 'connections', '--rounds': 'rounds' },
    mayBeZero: ['--warmup'],
    switches: {
      '--no-build': (o) => (o.build = false),
      '--no-pin': (o) => (o.pin = false),
      '--no-sql-times': (o) => (o.sqlTimes = false),
      '--profile': (o) => (o.profile = true),
    },
    values: {
      '--apply-sql': { needs: 'a file', set: (o, file) => (o.applySql = path.resolve(file)) },
      '--only': { needs: 'routes (first,deep,orgs,org)', set: (o, list) => (o.only = list.split(',')) },
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Load (wrk, pinning and child processes as in bench/http/run.ts: bench/wrk.ts, bench/processes.ts)

interface Target extends WrkTarget {
  key: string;
  label: string;
  /** The server process, whose CPU time per request is reported beside the rate. */
  pid: number;
}

interface Row {
  label: string;
  rps: number;
  p50ms: number;
  p99ms: number;
  /** CPU time of the server process per request. */
  cpuUs: number;
  /** CPU time of the scratch database's Postgres backends per request (those alive before and after). */
  pgCpuUs: number;
  requests: number;
  errors: number;
}

function printRow(r: Row): void {
  console.log(
    `    ${r.label.padEnd(54)} ${fmtRate(r.rps).padStart(7)} req/s  p50 ${r.p50ms.toFixed(2).padStart(6)} ms  p99 ${r.p99ms.toFixed(2).padStart(6)} ms` +
      `  CPU ${r.cpuUs.toFixed(0)} µs/req, Postgres ${Number.isFinite(r.pgCpuUs) ? r.pgCpuUs.toFixed(0) : '?'} µs/req${r.errors ? `  (${r.errors} errors or non-2xx!)` : ''}`,
  );
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  if (!checkWrk()) return;
  const cpus = os.cpus().length;
  const { serverCpu, wrkCpu } = cpuPinning(opts.pin);
  const started = performance.now();
  // Before this benchmark's own work (build, seed, load — which drive the load average up themselves).
  const loadAtStart = os.loadavg()[0]!;

  const mainJs = buildService(opts.build);

  let owner: Knex | null = null;
  const scratch = openScratch('orgs', async () => {
    if (owner) await owner.destroy().catch(() => undefined);
  });
  const { id, database, prefix, redisUrl, admin, profileDir } = scratch;
  const sessionSecret = randomBytes(32).toString('base64url');

  try {
    // Scratch database, migrated; the bench user with a bearer session; then the bulk seed.
    const dbUrl = await scratch.createDatabase();
    // DATABASE_POOL_MAX from the environment sizes both our pool and the baselines' (10 by default).
    const seedConfig = loadConfig({ NODE_ENV: 'test', DATABASE_URL: dbUrl, SESSION_SECRET: sessionSecret, DATABASE_POOL_MAX: process.env.DATABASE_POOL_MAX });
    // The owner's connection (one: the seed's session settings hold for all its statements).
    owner = createDatabase(dbUrl, 1, createLogger('warn'));
    await migrateLatest(owner);
    const userId = await insertUser(owner, { email: `bench-${id}@example.com`, name: 'Bench User' });
    await owner('users').where({ id: userId }).update({ email_verified_at: owner.fn.now() });
    const token = (await createSession(owner, { userId, transport: 'bearer' }, seedConfig.session)).token;
    console.log('seeding (set-based SQL as the owner)…');
    const seeded = await seed(owner, userId);
    const t = seeded.seconds;
    console.log(
      `seeded in ${t.total.toFixed(1)} s (projects ${t.projects.toFixed(1)} s, organisations ${t.orgs.toFixed(1)} s, memberships ${t.memberships.toFixed(1)} s, ` +
        `users ${t.users.toFixed(1)} s, vacuum + analyze ${t.vacuumAnalyze.toFixed(1)} s): ${seeded.orgs.toLocaleString('en')} organisations, ` +
        `${seeded.projects.toLocaleString('en')} projects, ${seeded.memberships.toLocaleString('en')} memberships, ${seeded.users.toLocaleString('en')} users`,
    );
    console.log(
      `    every organisation has 100 projects except the ${seeded.largest} largest: ${seeded.orgProjects.toLocaleString('en')} projects (so that page ${DEEP_PAGE} of ${PAGE} exists) and ${seeded.orgMembers} members\n` +
        `    bench user: member of ${seeded.userOrgs.toLocaleString('en')} organisations (the largest among them); measured organisation: ${seeded.orgId}, one of the largest`,
    );

    if (opts.applySql) {
      await owner.raw(fs.readFileSync(opts.applySql, 'utf8'));
      console.log(`applied ${path.relative(projectRoot, opts.applySql)} to the scratch database: NOT the shipped schema`);
    }

    // The deep page's cursor: the id of the 2,450th newest project of the measured organisation.
    const deepAfter = (await owner('projects').where({ org_id: seeded.orgId }).orderBy('id', 'desc').offset((DEEP_PAGE - 1) * PAGE - 1).first('id')).id as string;
    const deepCursor = encodeCursor({ id: deepAfter });

    const setRls = async (on: boolean) => {
      // A request still finishing can hold one of the tables while waiting for another: PostgreSQL
      // then picks one side of the deadlock to fail, perhaps this one. Try again.
      for (let attempt = 1; ; attempt++) {
        try {
          return void (await owner!.raw(TENANT_TABLES.map((table) => `alter table ${table} ${on ? 'enable' : 'disable'} row level security;`).join('\n')));
        } catch (err) {
          if ((err as { code?: string }).code !== '40P01' || attempt === 5) throw err;
        }
      }
    };

    // Servers: ours and the bare SQL baseline, both pinned to the same CPU.
    const auth = `Bearer ${token}`;
    const startOurs = (name: string, nodeFlags: string[] = []) =>
      startService(name, {
        mainJs,
        cpu: serverCpu,
        nodeFlags,
        sessionSecret,
        databaseUrl: dbUrl,
        redisUrl,
        redisPrefix: prefix,
        auth,
        env: { RATE_LIMIT_IP_PER_MINUTE: UNLIMITED },
      });
    const ours = await startOurs('our service');
    // After the service's start: the application role exists and has its grants.
    const appUrl = await connectionString(appDatabase(seedConfig, dbUrl));
    const poolMax = seedConfig.databasePoolMax;
    const bareEnv = { BARE_DATABASE_URL: appUrl, BARE_POOL_MAX: String(poolMax) };
    const bare = await startBareServer('bare node:http + pg', path.join(__dirname, '../bare/node.ts'), serverCpu, bareEnv);
    const express = await startBareServer('bare Express 5 + pg', path.join(__dirname, '../bare/express.ts'), serverCpu, bareEnv);

    const paths = {
      first: `/v1/orgs/${seeded.orgId}/projects`,
      deep: `/v1/orgs/${seeded.orgId}/projects?cursor=${deepCursor}`,
      orgs: '/v1/orgs',
      org: `/v1/orgs/${seeded.orgId}`,
    };
    type Endpoint = keyof typeof paths;
    const ENDPOINTS = (['first', 'deep', 'orgs', 'org'] as Endpoint[]).filter((e) => !opts.only || opts.only.includes(e));
    if (!ENDPOINTS.length) throw new Error(`${USAGE}\n(--only names none of first, deep, orgs, org)`);
    const names: Record<Endpoint, string> = {
      first: 'GET /v1/orgs/{id}/projects (page 1)',
      deep: `GET /v1/orgs/{id}/projects (page ${DEEP_PAGE})`,
      orgs: 'GET /v1/orgs (1,000-org user)',
      org: 'GET /v1/orgs/{id}',
    };

    // Both servers answer the same items, with RLS on and off (page 50 starts at the 2,451st newest).
    const expectedDeepFirst = (await owner('projects').where({ org_id: seeded.orgId }).orderBy('id', 'desc').offset((DEEP_PAGE - 1) * PAGE).first('id')).id as string;
    const check = async (server: Server, p: Endpoint) => {
      const res = await fetch(`${server.url}${paths[p]}`, { headers: { Authorization: auth } });
      const body: any = await res.json();
      if (res.status !== 200) throw new Error(`${server.name} GET ${paths[p]} answered ${res.status}: ${JSON.stringify(body)}`);
      return p === 'org' ? [body.id, body.member_count] : [body.items.length, body.items[0]?.id, body.items.at(-1)?.id, body.next_cursor];
    };
    for (const rls of [true, false]) {
      await setRls(rls);
      for (const p of ENDPOINTS) {
        const a = JSON.stringify(await check(ours, p));
        for (const baseline of [bare, express]) {
          const b = JSON.stringify(await check(baseline, p));
          if (a !== b) throw new Error(`${names[p]}: our service and ${baseline.name} disagree (RLS ${rls ? 'on' : 'off'}): ${a} vs ${b}`);
        }
      }
    }
    await setRls(true);
    const deepCheck = await check(ours, 'deep');
    if (deepCheck[0] !== PAGE || deepCheck[1] !== expectedDeepFirst) throw new Error(`page ${DEEP_PAGE} is not the 2,451st–2,500th newest projects: ${JSON.stringify(deepCheck)}`);

    console.log(
      `\norganisations benchmark: node ${process.version}, ${cpus} CPUs (${os.cpus()[0]?.model ?? '?'}, load average ${loadAtStart.toFixed(1)} before the run), wrk -t1 -c${opts.connections}, ` +
        `warm-up ${opts.warmup} s, ${opts.duration} s × ${opts.rounds} round(s) (median), ` +
        (opts.pin ? 'servers pinned to CPU 0, wrk to CPU 1 (Postgres floats)' : 'no CPU pinning') +
        `\nour service: node dist/src/main.js serve, NODE_ENV=production, RUN_WORKERS=false, LOG_LEVEL=warn, DATABASE_POOL_MAX=${poolMax}; ` +
        `baselines: bench/bare (Express 5 and node:http, pg.Pool max ${poolMax}, the same SQL as the same role); scratch database ${database}` +
        `\nevery answer checked: 200, the same items from ours and both baselines with RLS on and off; page ${DEEP_PAGE} = the 2,451st–2,500th newest projects\n`,
    );

    const target = (key: string, label: string, server: Server, p: string): Target => ({
      key,
      label,
      url: `${server.url}${p}`,
      auth,
      connections: opts.connections,
      cpu: wrkCpu,
      pid: server.child.pid!, // taskset execs the command: the same pid
    });
    const on = Object.fromEntries(ENDPOINTS.map((e) => [e, target(`on.${e}`, `ours ${names[e]}`, ours, paths[e])])) as Record<Endpoint, Target>;
    const off = Object.fromEntries(ENDPOINTS.map((e) => [e, target(`off.${e}`, `ours ${names[e]}, RLS off`, ours, paths[e])])) as Record<Endpoint, Target>;
    const base = Object.fromEntries(ENDPOINTS.map((e) => [e, target(`bare.${e}`, `node:http ${names[e]}`, bare, paths[e])])) as Record<Endpoint, Target>;
    const ceiling = Object.fromEntries(ENDPOINTS.map((e) => [e, target(`express.${e}`, `Express 5 ${names[e]}`, express, paths[e])])) as Record<Endpoint, Target>;
    const me = target('me', 'ours GET /v1/auth/me', ours, '/v1/auth/me');
    const onPhase = [me, ...ENDPOINTS.map((e) => on[e]), ...ENDPOINTS.map((e) => base[e]), ...ENDPOINTS.map((e) => ceiling[e])];
    const offPhase = ENDPOINTS.map((e) => off[e]);

    const measure = async (tg: Target): Promise<Row> => {
      // The scratch database's backends: the service's and the baselines' pools.
      const postgres = await scratch.postgresCpu();
      const before = cpuMs(tg.pid);
      const r = await runWrk(tg, opts.duration);
      const cpuUsed = cpuMs(tg.pid) - before;
      const pgUsed = await postgres();
      return {
        label: tg.label,
        ...wrkSummary(r),
        cpuUs: (cpuUsed * 1000) / Math.max(1, r.requests),
        pgCpuUs: (pgUsed * 1000) / Math.max(1, r.requests),
      };
    };

    if (opts.warmup > 0) {
      console.log(`warm-up: ${opts.warmup} s each`);
      for (const tg of onPhase) await runWrk(tg, opts.warmup);
      await setRls(false);
      try {
        for (const tg of offPhase) await runWrk(tg, opts.warmup);
      } finally {
        await setRls(true);
      }
    }

    const rows = new Map<string, Row[]>([...onPhase, ...offPhase].map((tg) => [tg.key, []]));
    const vsExpress = Object.fromEntries(ENDPOINTS.map((e) => [e, [] as number[]])) as Record<Endpoint, number[]>;
    const rlsCost = Object.fromEntries(ENDPOINTS.map((e) => [e, [] as number[]])) as Record<Endpoint, number[]>;
    for (let round = 1; round <= opts.rounds; round++) {
      console.log(`round ${round}/${opts.rounds}:`);
      const got = new Map<string, Row>();
      const runPhase = async (rls: boolean) => {
        const phase = rls ? onPhase : offPhase;
        console.log(`  RLS ${rls ? 'on' : 'off'}:`);
        await setRls(rls);
        try {
          for (const tg of rotate(phase, round - 1)) {
            const row = await measure(tg);
            rows.get(tg.key)!.push(row);
            got.set(tg.key, row);
            printRow(row);
          }
        } finally {
          if (!rls) await setRls(true);
        }
      };
      // Alternate which phase goes first, so that neither always follows the other.
      for (const rls of round % 2 === 1 ? [true, false] : [false, true]) await runPhase(rls);
      for (const e of ENDPOINTS) vsExpress[e].push(got.get(`on.${e}`)!.rps / got.get(`express.${e}`)!.rps);
      for (const e of ENDPOINTS) rlsCost[e].push(1 - got.get(`on.${e}`)!.rps / got.get(`off.${e}`)!.rps);
    }

    // -----------------------------------------------------------------------------------------
    const r = (key: string) => medianRow(rows.get(key)!);
    const rMe = r('me');
    const header = `${'target'.padEnd(54)} ${'req/s'.padStart(7)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'node µs/req'.padStart(11)} ${'pg µs/req'.padStart(9)}  notes (ratios: median of the rounds' ratios)`;
    const line = (row: Row, note = '') =>
      `${row.label.padEnd(54)} ${fmtRate(row.rps).padStart(7)} ${row.p50ms.toFixed(2).padStart(7)} ${row.p99ms.toFixed(2).padStart(7)} ${row.cpuUs.toFixed(0).padStart(11)} ${(Number.isFinite(row.pgCpuUs) ? row.pgCpuUs.toFixed(0) : '?').padStart(9)}  ${note}`;
    console.log(`\nmedian of ${opts.rounds} round(s) of ${opts.duration} s, ${opts.connections} connections:\n${header}\n${'-'.repeat(header.length)}`);
    console.log(line(rMe, 'for reference'));
    const cpuOf = (key: string) => median(rows.get(key)!.map((row) => row.cpuUs + row.pgCpuUs));
    for (const e of ENDPOINTS) {
      const ours_ = r(`on.${e}`);
      const vsNode = median(rows.get(`express.${e}`)!.map((row, i) => row.rps / rows.get(`bare.${e}`)![i]!.rps));
      console.log(line(r(`bare.${e}`), 'the same SQL on bare node:http + pg'));
      console.log(line(r(`express.${e}`), `the same SQL on bare Express 5 + pg: the ceiling (${vsNode.toFixed(2)}× node:http)`));
      console.log(
        line(ours_, `RLS on: ${median(vsExpress[e]).toFixed(2)}× the ceiling; CPU (node + pg) per request ${(cpuOf(`on.${e}`) / cpuOf(`express.${e}`)).toFixed(2)}× its`),
      );
      console.log(line(r(`off.${e}`), `RLS off: the policies cost ${(median(rlsCost[e]) * 100).toFixed(1)}% of the throughput`));
    }
    for (const [key, list] of rows) {
      const errors = list.reduce((n, row) => n + row.errors, 0);
      if (errors > 0) console.log(`WARNING: ${key}: ${errors} socket errors or non-2xx answers over the rounds`);
    }

    const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
    console.log(`\naims (RLS on, ${opts.connections} connections):`);
    for (const e of ENDPOINTS) {
      const ratio = median(vsExpress[e]);
      console.log(`  ${verdict(ratio >= AIMS.vsExpress)}  ${`req/s ≥ ${AIMS.vsExpress}× bare Express`.padEnd(30)} ${names[e].padEnd(40)} ${ratio.toFixed(2)}× (${fmtRate(r(`on.${e}`).rps)} vs ${fmtRate(r(`express.${e}`).rps)} req/s)`);
    }
    for (const e of ENDPOINTS) {
      const p99 = r(`on.${e}`).p99ms;
      const ceilingP99 = r(`express.${e}`).p99ms;
      console.log(`  ${verdict(p99 <= AIMS.p99VsExpress * ceilingP99)}  ${`p99 ≤ ${AIMS.p99VsExpress}× bare Express's`.padEnd(30)} ${names[e].padEnd(40)} ${p99.toFixed(2)} ms vs ${ceilingP99.toFixed(2)} ms`);
    }
    for (const e of ENDPOINTS) {
      const cost = median(rlsCost[e]);
      console.log(
        `  ${verdict(cost < AIMS.rlsCost)}  ${`RLS cost < ${AIMS.rlsCost * 100}% of req/s`.padEnd(30)} ${names[e].padEnd(40)} ${(cost * 100).toFixed(1)}% (${fmtRate(r(`on.${e}`).rps)} on vs ${fmtRate(r(`off.${e}`).rps)} off req/s; p50 ${r(`on.${e}`).p50ms.toFixed(2)} vs ${r(`off.${e}`).p50ms.toFixed(2)} ms)`,
      );
    }
    if (loadAtStart > 0.5 * cpus) console.log(`  note: load average ${loadAtStart.toFixed(1)} on ${cpus} CPUs before the run — other processes were busy; rerun on a quiet machine for absolute numbers`);
    if (opts.applySql) console.log(`  note: measured with ${path.relative(projectRoot, opts.applySql)} applied — NOT the shipped schema`);

    if (opts.sqlTimes) await sqlTimes(appUrl, setRls, seeded, userId, deepAfter);

    if (opts.profile) {
      // Where our service's CPU goes under each measured GET (RLS on): a fresh instance with
      // --cpu-prof, pinned like the measured one; only the load phase is summarised.
      // The bare Express server is profiled the same way after it: the difference is ours to find.
      for (const e of ENDPOINTS) {
        const atProfiled = (profiled: Server): Target => ({ ...on[e], url: `${profiled.url}${paths[e]}`, pid: profiled.child.pid! });
        const sides = [
          { name: 'our service', start: (nodeFlags: string[]) => startOurs('our service (profiled)', nodeFlags) },
          { name: 'bare Express 5 + pg', start: (nodeFlags: string[]) => startBareServer('bare Express 5 + pg (profiled)', path.join(__dirname, '../bare/express.ts'), serverCpu, bareEnv, nodeFlags) },
        ];
        for (const side of sides) {
          await profileService({
            profileDir,
            start: side.start,
            warmUp: (profiled) => runWrk(atProfiled(profiled), 1),
            load: (profiled) => runWrk(atProfiled(profiled), opts.duration),
            heading: (res) => `\nCPU profile of ${side.name} under ${names[e]} (${fmtRate(wrkRate(res))} req/s while profiled; load phase only):`,
          });
        }
      }
    }
    console.log(`\ntotal run time ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await scratch.cleanup();
  }
}

/**
 * The database's share, without HTTP or concurrency: the statements of each request (BEGIN,
 * set_config, membership lookup, list, COMMIT; the session lookup left out) run one after another
 * on one connection as the application role, for the bench user (1,000 organisations) and a
 * typical member (10), RLS on and off; then the plan of the page-1 list under the policies.
 */
async function sqlTimes(appUrl: string, setRls: (on: boolean) => Promise<void>, seeded: Seeded, benchUserId: string, deepAfter: string): Promise<void> {
  const N = 100;
  const client = new pg.Client({ connectionString: appUrl });
  await client.connect();
  type Stmt = [string, unknown[]];
  const requests = (userId: string, orgId: string): Record<string, { orgId: string | null; stmts: Stmt[] }> => ({
    first: { orgId, stmts: [[LIST_PROJECTS_AS_MEMBER.text, [userId, orgId, null, PAGE + 1]]] },
    deep: { orgId, stmts: [[LIST_PROJECTS_AS_MEMBER.text, [userId, orgId, deepAfter, PAGE + 1]]] },
    orgs: { orgId: null, stmts: [[LIST_ORGS.text, [userId, null, null, PAGE + 1]]] },
    org: { orgId, stmts: [[ENTER_ORG.text, [userId, orgId, false]]] },
  });
  const once = async (userId: string, orgId: string | null, stmts: Stmt[]) => {
    const t0 = performance.now();
    await client.query('BEGIN;');
    if (!orgId) await client.query(SET_CONTEXT, [userId, '', '']); // with an organisation, app_enter_org sets it
    for (const [sql, values] of stmts) await client.query(sql, values);
    await client.query('COMMIT;');
    return performance.now() - t0;
  };
  try {
    const users = [
      { name: `bench user (${seeded.userOrgs} orgs)`, id: benchUserId },
      { name: `typical member (${seeded.typicalUserOrgs} orgs)`, id: seeded.typicalUserId },
    ];
    console.log(`\nSQL time per request in ms (median of ${N}; one connection, no HTTP: BEGIN + set_config + the request's statements + COMMIT, the session lookup left out):`);
    console.log(`  ${'request'.padEnd(24)} ${users.map((u) => `${u.name}: RLS on / off`.padStart(40)).join(' ')}`);
    const results: Record<string, string[]> = {};
    for (const rls of [true, false]) {
      await setRls(rls);
      try {
        for (const u of users) {
          for (const [key, { orgId, stmts }] of Object.entries(requests(u.id, seeded.orgId))) {
            for (let i = 0; i < 10; i++) await once(u.id, orgId, stmts);
            const times: number[] = [];
            for (let i = 0; i < N; i++) times.push(await once(u.id, orgId, stmts));
            (results[`${key}|${u.id}`] ??= []).push(median(times).toFixed(2));
          }
        }
      } finally {
        await setRls(true);
      }
    }
    const labels: Record<string, string> = { first: 'projects page 1', deep: `projects page ${DEEP_PAGE}`, orgs: 'GET /v1/orgs', org: 'GET /v1/orgs/{id}' };
    for (const key of Object.keys(labels)) console.log(`  ${labels[key]!.padEnd(24)} ${users.map((u) => results[`${key}|${u.id}`]!.join(' / ').padStart(40)).join(' ')}`);

    // The plan of the page-1 list as the application role, with the policies, for the bench user.
    await client.query('BEGIN;');
    await client.query(SET_CONTEXT, [benchUserId, seeded.orgId, '']);
    const plan = await client.query(`explain (analyze, costs on, timing on) ${LIST_PROJECTS}`, [seeded.orgId, PAGE + 1]);
    await client.query('COMMIT;');
    console.log('\nplan of the page-1 list under the policies (bench user, app.org_id set):');
    for (const row of plan.rows) console.log(`  ${row['QUERY PLAN']}`);
  } finally {
    await client.end();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
