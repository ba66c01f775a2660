// --profile: every SQL statement our side sends through ctx.db, grouped by what it does, with its
// count and latency (knex 'query' → 'query-response'), to see the database round trips per run;
// and this process's CPU time and event-loop delay for each side.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Knex } from 'knex';

interface Stat {
  count: number;
  totalMs: number;
  maxMs: number;
}

function classify(sql: string): string {
  const s = sql.toLowerCase();
  if (s.startsWith('insert into "job_runs"')) return 'insertRun (enqueue, in the transaction)';
  if (s.startsWith('update "job_runs"') && s.includes('attempt + 1')) return 'startAttempt (worker, before the handler)';
  if (s.startsWith('update "job_runs"') && s.includes('"handed_over_at"')) return 'markHandedOver (after each batch)';
  if (s.startsWith('update "job_runs"') && /"state" = (\?|\$\d+), "finalized_at"/.test(s)) return 'completeRun (worker, after the handler)';
  return s.replace(/\s+/g, ' ').slice(0, 60);
}

export class QueryProfile {
  private readonly stats = new Map<string, Stat>();
  private readonly started = new Map<string, { at: number; label: string }>();
  private readonly onQuery = (q: { sql: string; __knexQueryUid: string }) => {
    this.started.set(q.__knexQueryUid, { at: performance.now(), label: classify(q.sql) });
  };
  private readonly onResponse = (_res: unknown, q: { __knexQueryUid: string }) => {
    const s = this.started.get(q.__knexQueryUid);
    if (!s) return;
    this.started.delete(q.__knexQueryUid);
    const ms = performance.now() - s.at;
    const stat = this.stats.get(s.label) ?? { count: 0, totalMs: 0, maxMs: 0 };
    stat.count++;
    stat.totalMs += ms;
    stat.maxMs = Math.max(stat.maxMs, ms);
    this.stats.set(s.label, stat);
  };

  constructor(private readonly db: Knex) {}

  start(): void {
    this.stats.clear();
    this.db.on('query', this.onQuery).on('query-response', this.onResponse);
  }

  stop(): void {
    this.db.off('query', this.onQuery).off('query-response', this.onResponse);
  }

  /** Lines for the report: counts per run (`runs`), latencies, and how busy the worker slots were waiting. */
  report(runs: number, wallMs: number, concurrency: number): string[] {
    const rows = [...this.stats.entries()].sort((a, b) => b[1].totalMs - a[1].totalMs);
    const lines = [`${'statement'.padEnd(44)} ${'per run'.padStart(8)} ${'avg ms'.padStart(8)} ${'max ms'.padStart(8)} ${'total ms'.padStart(9)}`];
    let workerMs = 0;
    for (const [label, s] of rows) {
      if (label.startsWith('startAttempt') || label.startsWith('completeRun')) workerMs += s.totalMs;
      lines.push(
        `${label.padEnd(44)} ${(s.count / runs).toFixed(2).padStart(8)} ${(s.totalMs / s.count).toFixed(2).padStart(8)} ${s.maxMs.toFixed(1).padStart(8)} ${s.totalMs.toFixed(0).padStart(9)}`,
      );
    }
    const slotMs = wallMs * concurrency;
    lines.push(
      `worker slots busy waiting for Postgres (startAttempt + completeRun): ${((workerMs / slotMs) * 100).toFixed(0)}% of ${concurrency} slots × ${wallMs.toFixed(0)} ms`,
    );
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
