// job_runs as the /ops endpoints read them: run lists (filters, newest-first pages) and the counts
// of the overview and the queue list. Nothing here changes a run (see run-lifecycle-store.ts).
import type { Knex } from 'knex';
import type { Db } from '../platform/database';
import { prepared, runPrepared } from '../platform/prepared';
import { FINAL_STATES, LIVE_STATES, toRun, type JobRun, type JobState } from './run-lifecycle-store';

export interface RunFilter {
  /** Each filter matches any of its values; the filters combine with AND. Empty or absent: no filter. */
  kinds?: string[];
  states?: JobState[];
  queues?: string[];
  /** Only runs with a smaller id (the cursor of newest-first pages). */
  beforeId?: number;
}

/**
 * Newest first, in one statement. Finished runs are read from partial indexes led by state, kind
 * or queue (see the job_runs_indexes migration), which give them in id order for ONE value each:
 * so each such value is its own branch, newest first and limited, and the branches are merged
 * (PostgreSQL's Merge Append), never sorting every matching row. Waiting and running runs (a
 * small set) are one branch, through their index on id.
 */
export async function listRuns(db: Db, filter: RunFilter, limit: number): Promise<JobRun[]> {
  const kinds = unique(filter.kinds);
  const states = unique(filter.states);
  const queues = unique(filter.queues);
  const select = (only: { states?: JobState[]; kind?: string; queue?: string } = {}) => {
    const q = db('job_runs').orderBy('id', 'desc').limit(limit);
    if (only.states) q.whereIn('state', only.states);
    else if (states.length) q.whereIn('state', states);
    if (only.kind) q.where('kind', only.kind);
    else if (kinds.length) q.whereIn('kind', kinds);
    if (only.queue) q.where('queue', only.queue);
    else if (queues.length) q.whereIn('queue', queues);
    if (filter.beforeId) q.where('id', '<', filter.beforeId);
    return q;
  };
  let branches: Knex.QueryBuilder[];
  if (states.length) {
    const live = states.filter((s) => LIVE_STATES.includes(s));
    branches = states.filter((s) => FINAL_STATES.includes(s)).map((s) => select({ states: [s] }));
    if (live.length) branches.push(select({ states: live }));
  } else if (kinds.length) {
    branches = [select({ states: LIVE_STATES }), ...kinds.map((kind) => select({ states: FINAL_STATES, kind }))];
  } else if (queues.length) {
    branches = [select({ states: LIVE_STATES }), ...queues.map((queue) => select({ states: FINAL_STATES, queue }))];
  } else {
    branches = [select()];
  }
  if (branches.length === 1) return (await branches[0]!).map(toRun);
  const union = branches.map(() => '(?)').join(' union all ');
  const { rows } = await db.raw(`select * from (${union}) as r order by id desc limit ?`, [...branches, limit]);
  return rows.map(toRun);
}

function unique<T>(values: T[] | undefined): T[] {
  return [...new Set(values ?? [])];
}

export async function lastRunOfKind(db: Db, kind: string): Promise<JobRun | null> {
  return (await listRuns(db, { kinds: [kind] }, 1))[0] ?? null;
}

// The overview and the queue list read rolling counters, not job_runs: the triggers of the
// job_run_counters migration keep them in every statement that writes job_runs. Each query reads
// a bounded number of rows, however many runs there are.

const COUNT_RUNS = prepared(
  'job_runs.count',
  'select kind, queue, state, sum(n)::bigint as count from job_run_counts group by kind, queue, state having sum(n) <> 0',
);

export interface RunCount {
  kind: string;
  queue: string;
  state: JobState;
  count: number;
}

/** Runs per kind, queue and state (groups without runs left out). */
export async function countRuns(db: Db): Promise<RunCount[]> {
  return runPrepared(db, COUNT_RUNS, []);
}

// The first entry of the partial index on available runs' scheduled_at.
const OLDEST_WAITING = prepared('job_runs.oldest_waiting', "select min(scheduled_at) as min from job_runs where state = 'available'");

export async function oldestWaitingSince(db: Db): Promise<Date | null> {
  const [row] = await runPrepared<{ min: Date | null }>(db, OLDEST_WAITING, []);
  return row?.min ?? null;
}

// Failed attempts count in the bucket of the minute of their `at` (the service's clock); the
// bucket holding `since` counts whole, so the window starts up to a minute before `since`.
const FAILURES_SINCE = prepared(
  'job_runs.failures_since',
  "select coalesce(sum(n), 0)::bigint as n from job_failure_counts where bucket >= date_bin(interval '1 minute', $1::timestamptz, timestamptz 'epoch')",
);

/** Failed attempts (entries of runs' `errors`) at `since` or later, to the minute. */
export async function failuresSince(db: Db, since: Date): Promise<number> {
  const [row] = await runPrepared<{ n: number }>(db, FAILURES_SINCE, [since]);
  return row?.n ?? 0;
}
