// The HTTP load generator of the benchmarks: Debian's `wrk` (apt-get install -y wrk), one thread,
// with bench/http/report.lua, which sets the request from the environment and prints one JSON
// summary line at the end.
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { cpuMs, pinned, runForJsonLine } from './processes';
import { fmtRate } from './rounds';

/** What report.lua prints: times in microseconds; errors: wrk's socket errors, timeouts and answers of status 400 or more. */
export interface WrkResult {
  requests: number;
  duration_us: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  max_us: number;
  mean_us: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
}

export interface WrkTarget {
  url: string;
  method?: 'GET' | 'POST';
  /** JSON (sent with Content-Type: application/json). */
  body?: string;
  /** The Authorization header. */
  auth?: string;
  connections: number;
  /** The CPU wrk is pinned to (null: not pinned). */
  cpu: number | null;
}

const REPORT_LUA = path.join(__dirname, 'http/report.lua');

/** False when wrk is not installed: then says how to install it (stderr) and sets the exit code to 1. */
export function checkWrk(): boolean {
  const r = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (r.error) {
    console.error("wrk is not installed. It is the load generator of this benchmark: install Debian's package with\n\n    apt-get install -y wrk\n");
    process.exitCode = 1;
    return false;
  }
  return true;
}

export function runWrk(t: WrkTarget, seconds: number): Promise<WrkResult> {
  const args = ['-t1', `-c${t.connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', REPORT_LUA, t.url];
  const [cmd, argv] = pinned(t.cpu, 'wrk', args);
  const env = { ...process.env, WRK_METHOD: t.method ?? 'GET', WRK_BODY: t.body ?? '', WRK_AUTH: t.auth ?? '' };
  return runForJsonLine<WrkResult>('wrk', cmd, argv, { env }, 'WRK_JSON ');
}

/** Requests per second over the run. */
export const wrkRate = (r: WrkResult) => r.requests / (r.duration_us / 1e6);

/** Rate, p50/p99 in ms, and all the errors of a run counted together. */
export function wrkSummary(r: WrkResult): { rps: number; p50ms: number; p99ms: number; requests: number; errors: number } {
  const e = r.errors;
  return {
    rps: wrkRate(r),
    p50ms: r.p50_us / 1000,
    p99ms: r.p99_us / 1000,
    requests: r.requests,
    errors: e.connect + e.read + e.write + e.status + e.timeout,
  };
}

/** A server measured under wrk: its label, and its process, whose CPU time per request is reported beside the rate. */
export interface MeasuredTarget extends WrkTarget {
  label: string;
  pid: number;
}

export interface MeasuredRow {
  label: string;
  rps: number;
  /** CPU time of the server process (all its threads) per request: steadier than req/s when other load shares the machine. */
  cpuUs: number;
  /** CPU time of the scratch database's PostgreSQL backends per request (NaN when not measured). */
  pgCpuUs: number;
  p50ms: number;
  p99ms: number;
  requests: number;
  errors: number;
  note?: string;
}

/**
 * One wrk run against `t`, with the server's CPU time per request (0 where /proc cannot be read)
 * and, given `postgres` (a scratch's `postgresCpu`), its database backends'.
 */
export async function runMeasured(t: MeasuredTarget, seconds: number, postgres?: () => Promise<() => Promise<number>>): Promise<MeasuredRow> {
  const postgresUsed = await postgres?.();
  const before = cpuMs(t.pid, 0);
  const r = await runWrk(t, seconds);
  const perRequest = (ms: number) => (ms * 1000) / Math.max(1, r.requests);
  const cpuUs = perRequest(cpuMs(t.pid, 0) - before);
  return { label: t.label, cpuUs, pgCpuUs: postgresUsed ? perRequest(await postgresUsed()) : Number.NaN, ...wrkSummary(r) };
}

export function printMeasured(r: MeasuredRow, labelWidth: number): void {
  console.log(
    `    ${r.label.padEnd(labelWidth)} ${fmtRate(r.rps).padStart(8)} req/s  p50 ${r.p50ms.toFixed(2)} ms  p99 ${r.p99ms.toFixed(2)} ms  CPU ${r.cpuUs.toFixed(0)} µs/req${Number.isNaN(r.pgCpuUs) ? '' : `, Postgres ${r.pgCpuUs.toFixed(0)} µs/req`}${r.errors ? `  (${r.errors} errors or non-2xx!)` : ''}`,
  );
}
