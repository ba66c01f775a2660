// --profile: every SQL statement this process sends (knex's and the named prepared statements
// alike: pg's Client.query is wrapped while profiling), grouped by what it does, with its count and
// latency, to see the database round trips per run; and this process's CPU time and event-loop
// delay for each side.
import fs from 'node:fs';
import inspector from 'node:inspector';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { formatProfile, summariseProfile } from '../http/cpu-profile';
import pg from 'pg';
import type { Knex } from 'knex';
import type Redis from 'ioredis';
import { cpuMs } from '../processes';

interface Stat {
  count: number;
  totalMs: number;
  maxMs: number;
}

const LABELS: Record<string, string> = {
  'job_runs.insert': 'insert runs (enqueueMany)',
  'job_runs.write_attempts': 'start + complete attempts (worker batch)',
};

function classify(config: unknown): string {
  if (typeof config === 'object' && config && 'name' in config && typeof config.name === 'string') return LABELS[config.name] ?? config.name;
  const text = typeof config === 'string' ? config : ((config as { text?: string } | null)?.text ?? '');
  return text.replace(/\s+/g, ' ').trim().slice(0, 40);
}

export class QueryProfile {
  private readonly stats = new Map<string, Stat>();
  private original: typeof pg.Client.prototype.query | null = null;

  start(): void {
    this.stats.clear();
    const original = (this.original = pg.Client.prototype.query);
    const record = (label: string, at: number) => {
      const ms = performance.now() - at;
      const stat = this.stats.get(label) ?? { count: 0, totalMs: 0, maxMs: 0 };
      stat.count++;
      stat.totalMs += ms;
      stat.maxMs = Math.max(stat.maxMs, ms);
      this.stats.set(label, stat);
    };
    pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
      const at = performance.now();
      const label = classify(config);
      const result = (original as (...args: unknown[]) => unknown).call(this, config, ...rest);
      if (result && typeof (result as Promise<unknown>).then === 'function') {
        (result as Promise<unknown>).then(
          () => record(label, at),
          () => record(label, at),
        );
      }
      return result;
    } as typeof pg.Client.prototype.query;
  }

  stop(): void {
    if (this.original) pg.Client.prototype.query = this.original;
    this.original = null;
  }

  /** Lines for the report: counts per run (`runs`) and latencies (sent → answered, as the caller waits). */
  report(runs: number): string[] {
    const rows = [...this.stats.entries()].sort((a, b) => b[1].totalMs - a[1].totalMs);
    const lines = [`${'statement'.padEnd(44)} ${'per run'.padStart(8)} ${'avg ms'.padStart(8)} ${'max ms'.padStart(8)} ${'total ms'.padStart(9)}`];
    for (const [label, s] of rows) {
      lines.push(
        `${label.padEnd(44)} ${(s.count / runs).toFixed(3).padStart(8)} ${(s.totalMs / s.count).toFixed(2).padStart(8)} ${s.maxMs.toFixed(1).padStart(8)} ${s.totalMs.toFixed(0).padStart(9)}`,
      );
    }
    return lines;
  }
}

/** CPU time of this process and event-loop delay over a section (both sides run in this process). */
export class ProcessProfile {
  private static readonly RESOLUTION_MS = 5;
  private readonly delay = monitorEventLoopDelay({ resolution: ProcessProfile.RESOLUTION_MS });
  private cpu = process.cpuUsage();

  start(): void {
    this.delay.reset();
    this.delay.enable();
    this.cpu = process.cpuUsage();
  }

  /** One line: CPU ms per job (user + system) and the event-loop delay p50/p99 (beyond the sampling timer's own period). */
  stop(runs: number, wallMs: number): string {
    this.delay.disable();
    const cpu = process.cpuUsage(this.cpu);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const ms = (ns: number) => Math.max(0, ns / 1e6 - ProcessProfile.RESOLUTION_MS).toFixed(1);
    return `node CPU ${(cpuMs / runs).toFixed(3)} ms/job (system ${(cpu.system / 1000 / runs).toFixed(3)}; ${((cpuMs / wallMs) * 100).toFixed(0)}% of one core), event-loop delay p50 ${ms(this.delay.percentile(50))} ms, p99 ${ms(this.delay.percentile(99))} ms`;
  }
}

/**
 * A V8 CPU profile of this process between start() and stop() (node:inspector), written to a
 * temporary file and summarised as bench:http summarises the service's: where our side's CPU per
 * job goes.
 */
export class CpuProfile {
  private readonly session = new inspector.Session();

  constructor(private readonly name = 'ours') {}

  async start(): Promise<void> {
    this.session.connect();
    await this.post('Profiler.enable');
    await this.post('Profiler.start');
  }

  async stop(jobs: number): Promise<string[]> {
    const { profile } = (await this.post('Profiler.stop')) as { profile: unknown };
    this.session.disconnect();
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-jobs-prof-')), 'ours.cpuprofile');
    fs.writeFileSync(file, JSON.stringify(profile));
    // BENCH_JOBS_PROFILES=<folder> keeps each profile there (for DevTools); BENCH_JOBS_TOP=<n> lists more functions.
    const keep = process.env.BENCH_JOBS_PROFILES;
    if (keep) fs.copyFileSync(file, path.join(keep, `${this.name}-${Date.now()}.cpuprofile`));
    try {
      return formatProfile(summariseProfile(file), jobs, Number(process.env.BENCH_JOBS_TOP) || 20).map((l) => l.replace('requests', 'jobs').replace('CPU/request', 'CPU/job'));
    } finally {
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
    }
  }

  private post(method: string): Promise<unknown> {
    return new Promise((resolve, reject) => this.session.post(method, (err, result) => (err ? reject(err) : resolve(result))));
  }
}

/**
 * CPU time of the servers over a section: the PostgreSQL backends of the bench database (its
 * connections and autovacuum workers; one that ended meanwhile is missed) and the Redis server
 * (INFO cpu: the whole server, so another client's load counts too). They share the cores with
 * this process, so their CPU per job bounds the rate as much as ours.
 */
export class ServerCpu {
  constructor(
    private readonly probe: Knex,
    private readonly redis: Redis,
  ) {}

  /** Starts measuring; the function answers the servers' CPU since, as a line per `jobs`. */
  async start(): Promise<(jobs: number) => Promise<string>> {
    const pg0 = await this.postgres();
    const redis0 = await this.redisMs();
    const calls0 = await this.redisCalls();
    return async (jobs) => {
      let pgMs = 0;
      for (const [pid, ms] of await this.postgres()) {
        const d = ms - (pg0.get(pid) ?? 0);
        if (Number.isFinite(d)) pgMs += d;
      }
      const redisMs = (await this.redisMs()) - redis0;
      const calls = await this.redisCalls();
      const perJob = (ms: number) => ((ms * 1000) / jobs).toFixed(0);
      const top = [...calls]
        .map(([cmd, n]) => [cmd, (n - (calls0.get(cmd) ?? 0)) / jobs] as const)
        .filter(([, n]) => n >= 0.05)
        .sort((a, b) => b[1] - a[1])
        .map(([cmd, n]) => `${cmd} ${n.toFixed(2)}`);
      return `postgres CPU ${perJob(pgMs)} µs/job, redis CPU ${perJob(redisMs)} µs/job; redis commands per job: ${top.join(', ')}`;
    };
  }

  private async postgres(): Promise<Map<number, number>> {
    const rows = (await this.probe.raw('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')).rows as { pid: number }[];
    return new Map(rows.map((r) => [r.pid, cpuMs(r.pid)]));
  }

  /** Commands the Redis server ran, by name (INFO commandstats: every client's). */
  private async redisCalls(): Promise<Map<string, number>> {
    const info = await this.redis.info('commandstats');
    return new Map([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
  }

  private async redisMs(): Promise<number> {
    const info = await this.redis.info('cpu');
    const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 'NaN');
    return (field('used_cpu_sys') + field('used_cpu_user')) * 1000;
  }
}
