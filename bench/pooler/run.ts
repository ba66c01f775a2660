// What PgBouncer in transaction mode costs the hot path, in one run: authenticated GET /v1/auth/me
// of three instances of our service (built, started as child processes) on the same scratch
// database, one at a time under wrk:
//
//   direct                         DATABASE_POOLER unset: named prepared statements, statement_timeout as a startup parameter (the baseline)
//   direct, DATABASE_POOLER=transaction   the same connection without them: unnamed statements, the role's default
//   through PgBouncer              DATABASE_APP_URL at a PgBouncer 1.18 (pool_mode = transaction), DATABASE_POOLER=transaction
//
// and then, without HTTP, what the server-side statement bound costs through the same PgBouncer:
// the role's default (nothing per statement) against SET LOCAL statement_timeout in every
// transaction, for /me's one statement (which needs a transaction of its own to take SET LOCAL)
// and for a short write transaction (alone, or piggybacked on BEGIN in one simple query). The
// role has synchronous_commit off, for the write transactions' sake: it applies to the services'
// requests through PgBouncer too, but /me writes nothing (its touch is once a minute).
//
//   npm run bench:pooler -- [--duration 5] [--warmup 2] [--connections 50] [--rounds 3]
//                           [--pool-size 10] [--sql-clients 10] [--no-build] [--no-pin]
//
// Rounds, pinning and wrk as in bench/http/run.ts: each round measures every target once in a
// rotating order; ratios are the medians of the per-round ratios; the servers run on CPU 0 and
// wrk on CPU 1; PostgreSQL, PgBouncer and Redis float. PgBouncer gets as many server connections
// as an instance's pool (--pool-size, DATABASE_POOL_MAX), so what is measured is its hop, not a
// queue for too few connections.
//
// Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; BENCH_DATABASE_URL to change), Redis
// (REDIS_URL), wrk, and Debian's pgbouncer (/usr/sbin/pgbouncer). Creates a scratch database
// bench_pooler_<random>, a login role bench_pooler_<random> for PgBouncer's auth file and the Redis
// prefix bench-pooler:<random>:, and removes them all (and every child process) at the end.
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { adminUrl, openScratch } from '../scratch';
import { parseOptions } from '../options';
import { cpuPinning, pinByDefault, type Server } from '../processes';
import { buildService, startService } from '../service';
import { checkWrk, printMeasured, runMeasured, runWrk, type MeasuredRow, type MeasuredTarget } from '../wrk';
import { fmtRate, median, medianBy, medianRow, rotate } from '../rounds';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createDatabase, migrateLatest } from '../../src/platform/database';
import { insertUser } from '../../src/accounts/store';
import { createSession, FIND_LIVE_SESSION_WITH_SECOND_FACTORS } from '../../src/sessions/store';
import { hashToken } from '../../src/sessions/tokens';
import { PgBouncer } from '../../test/support/pgbouncer';

/** The service's default DATABASE_STATEMENT_TIMEOUT_MS (query timeout 1000 − 100). */
const STATEMENT_TIMEOUT_MS = 900;

interface Options {
  duration: number;
  warmup: number;
  connections: number;
  rounds: number;
  poolSize: number;
  sqlClients: number;
  build: boolean;
  pin: boolean;
}

const USAGE =
  'usage: npm run bench:pooler -- [--duration 5] [--warmup 2] [--connections 50] [--rounds 3] [--pool-size 10] [--sql-clients 10] [--no-build] [--no-pin]';

function parseArgs(argv: string[]): Options {
  const defaults: Options = { duration: 5, warmup: 2, connections: 50, rounds: 3, poolSize: 10, sqlClients: 10, build: true, pin: pinByDefault() };
  return parseOptions(argv, defaults, {
    usage: USAGE,
    numbers: {
      '--duration': 'duration',
      '--warmup': 'warmup',
      '--connections': 'connections',
      '--rounds': 'rounds',
      '--pool-size': 'poolSize',
      '--sql-clients': 'sqlClients',
    },
    mayBeZero: ['--warmup'],
    switches: { '--no-build': (o) => (o.build = false), '--no-pin': (o) => (o.pin = false) },
  });
}

type Target = MeasuredTarget;
type Row = MeasuredRow;
const printRow = (r: Row) => printMeasured(r, 40);

// ---------------------------------------------------------------------------------------------
// The statement bound, at the SQL level: `clients` connections through PgBouncer, each running
// `unit` back to back for `seconds`; units per second and each unit's p50/p99.

interface SqlRow {
  label: string;
  perSecond: number;
  p50ms: number;
  p99ms: number;
}

type Unit = (c: pg.Client) => Promise<unknown>;

async function runSql(label: string, url: string, clients: number, seconds: number, unit: Unit): Promise<SqlRow> {
  const conns = await Promise.all(
    Array.from({ length: clients }, async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      return c;
    }),
  );
  const times: number[] = [];
  const until = performance.now() + seconds * 1000;
  try {
    await Promise.all(
      conns.map(async (c) => {
        while (performance.now() < until) {
          const start = performance.now();
          await unit(c);
          times.push(performance.now() - start);
        }
      }),
    );
  } finally {
    await Promise.all(conns.map((c) => c.end()));
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  return { label, perSecond: times.length / seconds, p50ms: at(0.5), p99ms: at(0.99) };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  if (!checkWrk()) return;
  const cpus = os.cpus().length;
  const { serverCpu, wrkCpu } = cpuPinning(opts.pin);
  const mainJs = buildService(opts.build);

  let bouncer: PgBouncer | null = null;
  const scratch = openScratch('pooler', async () => {
    await bouncer?.stop();
  });
  const { id, database, prefix, redisUrl, admin } = scratch;
  const role = { name: `bench_pooler_${id}`, password: randomBytes(18).toString('base64url') };
  let roleCreated = false;

  try {
    // Scratch database, migrated, with one user and a bearer session; a table for the write transaction.
    const dbUrl = await scratch.createDatabase();
    const seedConfig = loadConfig({ NODE_ENV: 'test', DATABASE_URL: dbUrl });
    const owner = createDatabase(dbUrl, 2, createLogger('warn'));
    let token: string;
    try {
      await migrateLatest(owner);
      const userId = await insertUser(owner, { email: `bench-${id}@example.com`, name: 'Bench User' });
      token = (await createSession(owner, { userId, transport: 'bearer' }, seedConfig.session)).token;
      await owner.raw('create table bench_writes (id bigserial primary key, org_id uuid, at timestamptz not null default now())');
    } finally {
      await owner.destroy();
    }
    // The role an operator makes for the pooler (DATABASE_APP_URL); the service grants it rows at start.
    await admin.raw(`create role ${role.name} login nosuperuser nobypassrls password '${role.password}'`);
    roleCreated = true;
    await admin.raw(`alter role ${role.name} set statement_timeout = ${STATEMENT_TIMEOUT_MS}`);
    // The write transactions below measure round trips, not the disk: no WAL flush at each commit
    // (what fsync takes on a shared machine varies more than the statement under test).
    await admin.raw(`alter role ${role.name} set synchronous_commit = off`);
    bouncer = await PgBouncer.start({ users: { [role.name]: role.password }, defaultPoolSize: opts.poolSize, maxClientConn: 1000, upstream: adminUrl('postgres') });
    const pooledUrl = bouncer.url(role.name, role.password, database);

    const auth = `Bearer ${token}`;
    const start = (label: string, env: NodeJS.ProcessEnv) =>
      startService(label, {
        mainJs,
        cpu: serverCpu,
        databaseUrl: dbUrl,
        redisUrl,
        redisPrefix: prefix,
        auth,
        env: { DATABASE_POOL_MAX: String(opts.poolSize), RATE_LIMIT_IP_PER_MINUTE: '0', ...env },
      });
    const direct = await start('direct', {});
    const unnamed = await start('direct, DATABASE_POOLER=transaction', { DATABASE_POOLER: 'transaction' });
    const pooled = await start('through PgBouncer', { DATABASE_APP_URL: pooledUrl, DATABASE_POOLER: 'transaction' });

    console.log(
      `\nPooler benchmark: node ${process.version}, ${cpus} CPUs (${os.cpus()[0]?.model ?? '?'}, load average ${os.loadavg()[0]!.toFixed(1)}), ` +
        `wrk -t1 -c${opts.connections}, warm-up ${opts.warmup} s, ${opts.duration} s × ${opts.rounds} round(s) (median), ` +
        `${opts.pin ? 'servers pinned to CPU 0, wrk to CPU 1' : 'no CPU pinning'}\n` +
        `each instance: node dist/src/main.js serve, NODE_ENV=production, DATABASE_POOL_MAX=${opts.poolSize}; ` +
        `PgBouncer 1.18: pool_mode = transaction, default_pool_size = ${opts.poolSize}, auth_type = scram-sha-256, no ignore_startup_parameters; scratch database ${database}\n`,
    );

    const target = (label: string, server: Server): Target => ({
      label: `${label.padEnd(38)} /me`,
      url: `${server.url}/v1/auth/me`,
      auth,
      connections: opts.connections,
      cpu: wrkCpu,
      pid: server.child.pid!,
    });
    const t = { direct: target('direct', direct), unnamed: target('direct, DATABASE_POOLER=transaction', unnamed), pooled: target('through PgBouncer (transaction)', pooled) };
    const order = [t.direct, t.unnamed, t.pooled];
    for (const server of [direct, unnamed, pooled]) {
      const status = (await fetch(`${server.url}/v1/auth/me`, { headers: { Authorization: auth } })).status;
      if (status !== 200) throw new Error(`${server.name}: GET /v1/auth/me answered ${status}`);
    }
    if (opts.warmup > 0) {
      console.log(`warm-up: ${opts.warmup} s each`);
      for (const target of order) await runWrk(target, opts.warmup);
    }
    const rows = new Map<Target, Row[]>(order.map((target) => [target, []]));
    const ratios = { unnamed: [] as number[], pooled: [] as number[], pooledVsUnnamed: [] as number[] };
    for (let round = 1; round <= opts.rounds; round++) {
      console.log(`round ${round}/${opts.rounds}:`);
      const got = new Map<Target, Row>();
      for (const target of rotate(order, round - 1)) {
        const row = await runMeasured(target, opts.duration);
        rows.get(target)!.push(row);
        got.set(target, row);
        printRow(row);
      }
      const base = got.get(t.direct)!.rps;
      ratios.unnamed.push(got.get(t.unnamed)!.rps / base);
      ratios.pooled.push(got.get(t.pooled)!.rps / base);
      ratios.pooledVsUnnamed.push(got.get(t.pooled)!.rps / got.get(t.unnamed)!.rps);
    }

    // -------------------------------------------------------------------------------------------
    // The statement bound through PgBouncer, without HTTP.
    const now = new Date();
    // As findLiveSession sends it: idle cutoff 14 days back, touch cutoff a minute back (touched once).
    const meValues = [hashToken(token), now, new Date(now.getTime() - 14 * 24 * 3600 * 1000), new Date(now.getTime() - 60_000)];
    const me = (c: pg.Client) => c.query({ text: FIND_LIVE_SESSION_WITH_SECOND_FACTORS.text, values: meValues });
    const orgId = '00000000-0000-4000-8000-000000000001';
    const write = async (c: pg.Client, setLocal: 'none' | 'statement' | 'with BEGIN') => {
      await c.query(setLocal === 'with BEGIN' ? `BEGIN; SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}` : 'BEGIN');
      if (setLocal === 'statement') await c.query(`SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}`);
      await c.query("select set_config('app.user_id', $1, true)", [orgId]);
      await c.query('insert into bench_writes (org_id) values ($1)', [orgId]);
      await c.query('COMMIT');
    };
    const units: { label: string; unit: Unit }[] = [
      { label: "/me's statement, role default (as shipped)", unit: me },
      {
        label: "/me's statement in BEGIN; SET LOCAL; …; COMMIT",
        unit: async (c) => {
          await c.query('BEGIN');
          await c.query(`SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}`);
          await me(c);
          await c.query('COMMIT');
        },
      },
      { label: 'write transaction, role default (as shipped)', unit: (c) => write(c, 'none') },
      { label: 'write transaction + SET LOCAL statement', unit: (c) => write(c, 'statement') },
      { label: "write transaction, SET LOCAL in BEGIN's query", unit: (c) => write(c, 'with BEGIN') },
    ];
    // One client: each round trip shows in the latency. Several: what the server and PgBouncer sustain.
    const clientCounts = [...new Set([1, opts.sqlClients])];
    const sqlRows = new Map<string, SqlRow[]>(clientCounts.flatMap((n) => units.map((u) => [`${n}:${u.label}`, []])));
    for (const clients of clientCounts) {
      console.log(`\nstatement bound through PgBouncer (${clients} client(s), ${opts.duration} s each, ${opts.rounds} round(s)):`);
      for (let round = 1; round <= opts.rounds; round++) {
        for (const { label, unit } of rotate(units, round - 1)) {
          const row = await runSql(label, pooledUrl, clients, opts.duration, unit);
          sqlRows.get(`${clients}:${label}`)!.push(row);
          console.log(`    ${label.padEnd(48)} ${fmtRate(row.perSecond).padStart(8)} /s  p50 ${row.p50ms.toFixed(2)} ms  p99 ${row.p99ms.toFixed(2)} ms`);
        }
      }
    }

    // -------------------------------------------------------------------------------------------
    const r = { direct: medianRow(rows.get(t.direct)!), unnamed: medianRow(rows.get(t.unnamed)!), pooled: medianRow(rows.get(t.pooled)!) };
    const header = `${'GET /v1/auth/me'.padEnd(44)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'CPU µs/req'.padStart(10)}  ratio (median of the rounds' ratios)`;
    const line = (row: Row, ratio: string) =>
      `${row.label.padEnd(44)} ${fmtRate(row.rps).padStart(9)} ${row.p50ms.toFixed(2).padStart(8)} ${row.p99ms.toFixed(2).padStart(8)} ${row.cpuUs.toFixed(0).padStart(10)}  ${ratio}`;
    console.log(`\nmedian of ${opts.rounds} round(s) of ${opts.duration} s:\n${header}\n${'-'.repeat(header.length + 4)}`);
    console.log(line(r.direct, '1.00 (the baseline)'));
    console.log(line(r.unnamed, `${median(ratios.unnamed).toFixed(2)} of direct (no named statements)`));
    console.log(line(r.pooled, `${median(ratios.pooled).toFixed(2)} of direct, ${median(ratios.pooledVsUnnamed).toFixed(2)} of direct with DATABASE_POOLER=transaction (PgBouncer's hop)`));
    for (const row of Object.values(r)) if (row.errors > 0) console.log(`WARNING: ${row.label}: ${row.errors} socket errors or non-2xx answers over the rounds`);

    // Each unit against its role-default twin, the median of the rounds' ratios.
    const sqlLine = (clients: number, i: number, base: number) => {
      const list = sqlRows.get(`${clients}:${units[i]!.label}`)!;
      const baseList = sqlRows.get(`${clients}:${units[base]!.label}`)!;
      const m = medianBy(list, (x) => x.perSecond);
      const ratio = median(list.map((x, round) => x.perSecond / baseList[round]!.perSecond));
      return `${units[i]!.label.padEnd(50)} ${fmtRate(m.perSecond).padStart(9)} /s  p50 ${m.p50ms.toFixed(2).padStart(6)} ms  p99 ${m.p99ms.toFixed(2).padStart(6)} ms  ${ratio.toFixed(2)} of the role default`;
    };
    for (const clients of clientCounts) {
      console.log(`\nstatement bound through PgBouncer, ${clients} client(s) (median of ${opts.rounds} round(s)):`);
      for (const [i, base] of [[0, 0], [1, 0], [2, 2], [3, 2], [4, 2]] as const) console.log(sqlLine(clients, i, base));
    }
    const loadNow = os.loadavg()[0]!;
    if (loadNow > cpus) console.log(`note: load average ${loadNow.toFixed(1)} on ${cpus} CPUs — other processes competed for the CPU; the ratios are per round, so less affected`);
  } finally {
    await scratch.cleanup();
    if (roleCreated) {
      // After the database is gone: a role with privileges in it cannot be dropped.
      const client = new pg.Client({ connectionString: adminUrl('postgres') });
      await client.connect();
      await client.query(`drop role if exists ${role.name}`);
      await client.end();
    }
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
