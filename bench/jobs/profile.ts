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
    return `node CPU ${(cpuMs / runs).toFixed(3)} ms/job (${((cpuMs / wallMs) * 100).toFixed(0)}% of one core), event-loop delay p50 ${ms(this.delay.percentile(50))} ms, p99 ${ms(this.delay.percentile(99))} ms`;
  }
}

/**
 * A V8 CPU profile of this process between start() and stop() (node:inspector), written to a
 * temporary file and summarised as bench:http summarises the service's: where our side's CPU per
 * job goes.
 */
export class CpuProfile {
  private readonly session = new inspector.Session();

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
    try {
      return formatProfile(summariseProfile(file), jobs).map((l) => l.replace('requests', 'jobs').replace('CPU/request', 'CPU/job'));
    } finally {
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
    }
  }

  private post(method: string): Promise<unknown> {
    return new Promise((resolve, reject) => this.session.post(method, (err, result) => (err ? reject(err) : resolve(result))));
  }
}
