// Jobs per second end to end through our job system (outbox row → handOver → our workers → row
// `completed`) for a no-op kind, beside bare BullMQ (Queue.add + Worker) in the same run.
//
//   npm run bench:jobs -- [--n 5000] [--batch 50] [--producers 1] [--warmup 2000] [--rounds 3] [--in-transaction] [--profile]
//
// Every round prints, for each side, the CPU per job of this process (both sides run in it), of
// PostgreSQL and of Redis, and Redis's commands per job. --profile adds the statements' latencies
// and a CPU profile of the last round.
//
// --in-transaction wraps each of our batches in an explicit transaction (BEGIN, INSERT, COMMIT), as
// a request that enqueues inside its business transaction does; by default a batch is one INSERT
// statement (its own transaction), as a bulk producer writes it.
//
// Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; BENCH_DATABASE_URL to change) and
// Redis (REDIS_URL, default redis://127.0.0.1:6379). Creates a scratch database bench_jobs_<random>
// and uses the Redis key prefix bench:<random>:, and removes both when it ends.
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import knex, { type Knex } from 'knex';
import { adminUrl, deleteKeys } from '../scratch';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createDatabase, migrateLatest } from '../../src/platform/database';
import { createRedis } from '../../src/platform/redis';
import { buildAppContext } from '../../src/app-context-factory';
import type { AppContext } from '../../src/app-context';
import { measureBare, type Measurement } from './bare';
import { measureOurs, noopKind } from './ours';
import Redis from 'ioredis';
import { CpuProfile, ProcessProfile, QueryProfile, ServerCpu } from './profile';

const AIM = 0.7; // issue 26: jobs end to end at 0.7 of bare BullMQ, the outbox and the PostgreSQL mirror kept

interface Options {
  n: number;
  batch: number;
  producers: number;
  warmup: number;
  rounds: number;
  profile: boolean;
  inTransaction: boolean;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { n: 5000, batch: 50, producers: 1, warmup: 2000, rounds: 3, profile: false, inTransaction: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.split('=', 2) as [string, string | undefined];
    if (flag === '--profile' || flag === '--in-transaction') {
      opts[flag === '--profile' ? 'profile' : 'inTransaction'] = true;
      continue;
    }
    const flags: Record<string, 'n' | 'batch' | 'producers' | 'warmup' | 'rounds'> = {
      '--n': 'n',
      '--batch': 'batch',
      '--producers': 'producers',
      '--warmup': 'warmup',
      '--rounds': 'rounds',
    };
    const key = flags[flag];
    const value = Number(inline ?? argv[++i]);
    if (!key || !Number.isInteger(value) || value < (key === 'warmup' ? 0 : 1)) {
      throw new Error(`usage: bench:jobs [--n 5000] [--batch 50] [--producers 1] [--warmup 2000] [--rounds 3] [--in-transaction] [--profile] (bad argument: ${arg})`);
    }
    opts[key] = value;
  }
  return opts;
}


async function asAdmin(sql: string): Promise<void> {
  const admin = knex({ client: 'pg', connection: adminUrl('postgres'), pool: { min: 0, max: 1 } });
  try {
    await admin.raw(sql);
  } finally {
    await admin.destroy();
  }
}


const rate = (m: Measurement) => (m.n / m.ms) * 1000;
const median = (ms: Measurement[]) => [...ms].sort((a, b) => rate(a) - rate(b))[Math.floor((ms.length - 1) / 2)]!;

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const id = randomBytes(4).toString('hex');
  const database = `bench_jobs_${id}`;
  const prefix = `bench:${id}:`;
  const config = loadConfig({ ...process.env, NODE_ENV: 'test', DATABASE_URL: adminUrl(database), REDIS_PREFIX: prefix, LOG_LEVEL: 'warn' });
  const logger = createLogger(config.logLevel);
  // The bare BullMQ side and the clean-up take a URL: the benchmark runs against one Redis.
  const redisUrl = config.redis.url;
  if (!redisUrl) throw new Error('bench:jobs needs one Redis (REDIS_URL), not a Sentinel group');

  let ctx: AppContext | null = null;
  let probe: Knex | null = null;
  let serverRedis: Redis | null = null;
  let dbCreated = false;
  let cleaned: Promise<void> | null = null;
  const cleanup = () =>
    (cleaned ??= (async () => {
      if (ctx) {
        await ctx.jobs.stop();
        ctx.mailer.close();
        ctx.redis.disconnect();
        await ctx.db.destroy();
      }
      await probe?.destroy();
      serverRedis?.disconnect();
      if (dbCreated) await asAdmin(`drop database if exists "${database}" with (force)`);
      const keys = await deleteKeys(redisUrl, prefix);
      console.log(`cleaned up: dropped ${database}, deleted ${keys} Redis keys under ${prefix}`);
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`${signal}: cleaning up`);
      cleanup().finally(() => process.exit(130));
    });
  }

  try {
    await asAdmin(`create database "${database}"`);
    dbCreated = true;
    const db = createDatabase(config.databaseUrl!, config.databasePoolMax, logger);
    await migrateLatest(db, logger);
    ctx = buildAppContext({ config, logger, db, redis: createRedis(config.redis), extraJobKinds: [noopKind] });
    ctx.state.databaseReady = true;
    probe = knex({ client: 'pg', connection: config.databaseUrl!, pool: { min: 1, max: 1 } });
    await ctx.jobs.init();
    await ctx.jobs.startWorkers();
    const concurrency = ctx.jobs.concurrencyOf('default');

    console.log(
      `jobs benchmark: no-op kind, queue 'default', concurrency ${concurrency}, N=${opts.n}, batches of ${opts.batch}, ${opts.producers} producer(s), ` +
        `warm-up ${opts.warmup}, ${opts.rounds} round(s), DB pool ${config.databasePoolMax}; node ${process.version}, ${os.cpus().length} CPUs`,
    );
    console.log(
      'both sides add one BullMQ job per run, a batch at a time with one addBulk; ours writes each batch with enqueueMany()\n' +
        (opts.inTransaction ? 'inside an explicit transaction (BEGIN, INSERT, COMMIT)' : 'as one INSERT statement (its own transaction)') +
        ' and hands it over after the commit; removeOnComplete/removeOnFail on both.',
    );

    const bare = (name: string, n: number) =>
      measureBare({ redisUrl, prefix: `${prefix}bare-${name}`, queue: 'default', n, batch: opts.batch, producers: opts.producers, concurrency });
    if (opts.warmup > 0) {
      await measureOurs(ctx, probe, { ...opts, n: opts.warmup });
      await bare('warmup', opts.warmup);
    }

    const ours: Measurement[] = [];
    const bares: Measurement[] = [];
    const queries = opts.profile ? new QueryProfile() : null;
    // CPU per job of this process (both sides run in it, one after the other), PostgreSQL and Redis: every run.
    const proc = new ProcessProfile();
    const servers = new ServerCpu(probe, (serverRedis = new Redis(redisUrl)));
    for (let round = 1; round <= opts.rounds; round++) {
      // The CPU profile of our side in the last round only (the profiler's own cost stays out of the others).
      const cpu = opts.profile && round === opts.rounds ? new CpuProfile() : null;
      queries?.start();
      const oursServers = await servers.start();
      proc.start();
      await cpu?.start();
      const o = await measureOurs(ctx, probe, opts);
      const cpuLines = await cpu?.stop(opts.n);
      const oursProc = proc.stop(opts.n, o.ms);
      const oursServerLine = await oursServers(opts.n);
      queries?.stop();
      const bareServers = await servers.start();
      proc.start();
      const bareCpu = cpu ? new CpuProfile('bare') : null;
      await bareCpu?.start();
      const b = await bare(String(round), opts.n);
      const bareCpuLines = await bareCpu?.stop(opts.n);
      const bareProc = proc.stop(opts.n, b.ms);
      const bareServerLine = await bareServers(opts.n);
      ours.push(o);
      bares.push(b);
      console.log(
        `round ${round}: ours ${rate(o).toFixed(0)} jobs/s (enqueued in ${(o.enqueueMs / 1000).toFixed(2)} s), ` +
          `bare ${rate(b).toFixed(0)} jobs/s (added in ${(b.enqueueMs / 1000).toFixed(2)} s), ratio ${(rate(o) / rate(b)).toFixed(2)}`,
      );
      console.log(`  ours: ${oursProc}; ${oursServerLine}\n  bare: ${bareProc}; ${bareServerLine}`);
      if (o.split) console.log(`  ours per batch of ${opts.batch}: write ${o.split.writeMs.toFixed(2)} ms, hand-over ${o.split.handOverMs.toFixed(2)} ms (bare: addBulk ${((b.enqueueMs / b.n) * opts.batch).toFixed(2)} ms)`);
      if (queries && round === opts.rounds) {
        console.log(`\nPostgres statements of our side, round ${round} (latency = sent → answered, as the caller waits):`);
        for (const line of queries.report(opts.n)) console.log(`  ${line}`);
      }
      if (cpuLines) console.log(`\nCPU profile of our side, round ${round} (this process: enqueue, workers, BullMQ, pg):\n${cpuLines.map((l) => `  ${l}`).join('\n')}`);
      if (bareCpuLines) console.log(`\nCPU profile of the bare side, round ${round}:\n${bareCpuLines.map((l) => `  ${l}`).join('\n')}`);
    }

    const o = median(ours);
    const b = median(bares);
    // Each round measures both sides back to back: the median of the rounds' ratios is the
    // figure least moved by other load on the machine drifting between rounds.
    const ratios = ours.map((m, i) => rate(m) / rate(bares[i]!)).sort((x, y) => x - y);
    const ratio = ratios[Math.floor((ratios.length - 1) / 2)]!;
    console.log(`\nmedian of ${opts.rounds} round(s):`);
    console.log(`  ${'side'.padEnd(34)} ${'N'.padStart(6)} ${'seconds'.padStart(8)} ${'jobs/s'.padStart(8)}`);
    console.log(`  ${'ours (outbox → workers → row)'.padEnd(34)} ${String(o.n).padStart(6)} ${(o.ms / 1000).toFixed(3).padStart(8)} ${rate(o).toFixed(0).padStart(8)}`);
    console.log(`  ${'bare BullMQ (add → worker)'.padEnd(34)} ${String(b.n).padStart(6)} ${(b.ms / 1000).toFixed(3).padStart(8)} ${rate(b).toFixed(0).padStart(8)}`);
    console.log(`  ratio ours/bare: ${ratio.toFixed(2)} (median of the rounds' ratios) — aim ≥ ${AIM}: ${ratio >= AIM ? 'met' : 'NOT met'}\n`);
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
