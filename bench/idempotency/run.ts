// What an Idempotency-Key costs a write: POST /v1/orgs/{orgId}/projects with and without a key
// (a new key per request: the first-request path, which takes the key's lock, looks up a stored
// answer and records this one inside the operation's transaction), the two alternating round by
// round on one instance of our service, with its CPU and PostgreSQL's per request.
//
//   npm run bench:idempotency -- [--duration 4] [--warmup 1] [--connections 16] [--rounds 4] [--no-build] [--no-pin]
//
// Load generator and pinning as in bench/http/run.ts. Needs PostgreSQL and Redis as bench:http
// does; creates a scratch database and Redis prefix and removes both at the end.
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openScratch } from '../scratch';
import { parseOptions } from '../options';
import { cpuMs, cpuPinning, pinByDefault, pinned, runForJsonLine } from '../processes';
import { buildService, startService, UNLIMITED } from '../service';
import { checkWrk, wrkSummary, type WrkResult } from '../wrk';
import { fmtRate, median, medianRow } from '../rounds';
import { seedBenchUser } from '../http/seed';
import { createDatabase } from '../../src/platform/database';
import { createLogger } from '../../src/logger';

interface Options {
  duration: number;
  warmup: number;
  connections: number;
  rounds: number;
  build: boolean;
  pin: boolean;
}

const USAGE = 'usage: npm run bench:idempotency -- [--duration 4] [--warmup 1] [--connections 16] [--rounds 4] [--no-build] [--no-pin]';

interface Row {
  label: string;
  rps: number;
  p50ms: number;
  p99ms: number;
  requests: number;
  errors: number;
  cpuUs: number;
  pgCpuUs: number;
}

function runCreateWrk(url: string, auth: string, connections: number, seconds: number, keyed: boolean, cpu: number | null): Promise<WrkResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', path.join(__dirname, 'create-project.lua'), url];
  const [cmd, argv] = pinned(cpu, 'wrk', args);
  const env = { ...process.env, WRK_REPORT: path.join(__dirname, '../http/report.lua'), WRK_AUTH: auth, IDEMPOTENCY: keyed ? '1' : '0', RUN_ID: randomBytes(6).toString('hex') };
  return runForJsonLine<WrkResult>('wrk', cmd, argv, { env }, 'WRK_JSON ');
}

async function main(): Promise<void> {
  const opts = parseOptions<Options>(process.argv.slice(2), { duration: 4, warmup: 1, connections: 16, rounds: 4, build: true, pin: pinByDefault() }, {
    usage: USAGE,
    numbers: { '--duration': 'duration', '--warmup': 'warmup', '--connections': 'connections', '--rounds': 'rounds' },
    mayBeZero: ['--warmup'],
    switches: { '--no-build': (o) => (o.build = false), '--no-pin': (o) => (o.pin = false) },
  });
  if (!checkWrk()) return;
  const { serverCpu, wrkCpu } = cpuPinning(opts.pin);
  const mainJs = buildService(opts.build);
  const scratch = openScratch('idempotency');
  try {
    const { dbUrl, token } = await seedBenchUser(scratch, 'bench-password-correct-horse', 4);
    // Creating an organisation needs a verified address.
    const owner = createDatabase(dbUrl, 1, createLogger('warn'));
    await owner('users').update({ email_verified_at: owner.fn.now() });
    await owner.destroy();
    const auth = `Bearer ${token}`;
    const server = await startService('our service', {
      mainJs,
      cpu: serverCpu,
      databaseUrl: dbUrl,
      redisUrl: scratch.redisUrl,
      redisPrefix: scratch.prefix,
      auth,
      env: { RATE_LIMIT_IP_PER_MINUTE: UNLIMITED },
    });
    const created = await fetch(`${server.url}/v1/orgs`, { method: 'POST', headers: { Authorization: auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Bench org' }) });
    if (created.status !== 201) throw new Error(`POST /v1/orgs answered ${created.status}: ${await created.text()}`);
    const orgId = ((await created.json()) as { id: string }).id;
    const url = `${server.url}/v1/orgs/${orgId}/projects`;
    // The key is honoured: the same key twice gives one project and a replay.
    const once = () => fetch(url, { method: 'POST', headers: { Authorization: auth, 'Content-Type': 'application/json', 'Idempotency-Key': '"bench-check"' }, body: '{"name":"Check"}' });
    const [first, again] = [await once(), await once()];
    if (first.status !== 201 || again.status !== 201 || again.headers.get('idempotent-replayed') !== 'true') {
      throw new Error(`the key check failed: ${first.status}, then ${again.status} replayed=${again.headers.get('idempotent-replayed')}`);
    }

    const measure = async (keyed: boolean): Promise<Row> => {
      const postgres = await scratch.postgresCpu();
      const before = cpuMs(server.child.pid!);
      const r = await runCreateWrk(url, auth, opts.connections, opts.duration, keyed, wrkCpu);
      const used = cpuMs(server.child.pid!) - before;
      const pgUsed = await postgres();
      const s = wrkSummary(r);
      return { label: keyed ? 'with Idempotency-Key' : 'without', ...s, cpuUs: (used * 1000) / Math.max(1, r.requests), pgCpuUs: (pgUsed * 1000) / Math.max(1, r.requests) };
    };

    console.log(
      `\nPOST /v1/orgs/{orgId}/projects, a new project per request: node ${process.version}, ${os.cpus().length} CPUs (load average ${os.loadavg()[0]!.toFixed(1)}), ` +
        `wrk -t1 -c${opts.connections}, ${opts.duration} s × ${opts.rounds} round(s), ${opts.pin ? 'server on CPU 0, wrk on CPU 1' : 'no pinning'}; the key check passed (one project, a replay)\n`,
    );
    if (opts.warmup > 0) for (const keyed of [false, true]) await runCreateWrk(url, auth, opts.connections, opts.warmup, keyed, wrkCpu);
    const rows = { without: [] as Row[], keyed: [] as Row[] };
    const ratios: number[] = [];
    for (let round = 1; round <= opts.rounds; round++) {
      const got: Partial<Record<'without' | 'keyed', Row>> = {};
      for (const keyed of round % 2 === 1 ? [false, true] : [true, false]) {
        const row = await measure(keyed);
        rows[keyed ? 'keyed' : 'without'].push(row);
        got[keyed ? 'keyed' : 'without'] = row;
        console.log(`  round ${round}: ${row.label.padEnd(22)} ${fmtRate(row.rps).padStart(6)} req/s  p50 ${row.p50ms.toFixed(2)} ms  p99 ${row.p99ms.toFixed(2)} ms  CPU ${row.cpuUs.toFixed(0)} µs/req, Postgres ${row.pgCpuUs.toFixed(0)} µs/req${row.errors ? `  (${row.errors} errors!)` : ''}`);
      }
      ratios.push(got.keyed!.rps / got.without!.rps);
    }
    const without = medianRow(rows.without);
    const keyed = medianRow(rows.keyed);
    const cpu = (list: Row[]) => median(list.map((r) => r.cpuUs));
    const pgCpu = (list: Row[]) => median(list.map((r) => r.pgCpuUs));
    console.log(`\nmedian of ${opts.rounds} rounds:`);
    for (const [row, list] of [[without, rows.without], [keyed, rows.keyed]] as const) {
      console.log(`  ${row.label.padEnd(22)} ${fmtRate(row.rps).padStart(6)} req/s  p50 ${row.p50ms.toFixed(2)} ms  p99 ${row.p99ms.toFixed(2)} ms  CPU ${cpu(list).toFixed(0)} µs/req, Postgres ${pgCpu(list).toFixed(0)} µs/req`);
    }
    console.log(
      `  a key costs ${((1 - median(ratios)) * 100).toFixed(1)} % of the throughput (median of the rounds' ratios), ` +
        `${(cpu(rows.keyed) - cpu(rows.without)).toFixed(0)} µs of the service's CPU and ${(pgCpu(rows.keyed) - pgCpu(rows.without)).toFixed(0)} µs of PostgreSQL's per request`,
    );
    for (const row of [...rows.without, ...rows.keyed]) if (row.errors) console.log(`WARNING: ${row.label}: ${row.errors} errors or non-2xx answers`);
  } finally {
    await scratch.cleanup();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
