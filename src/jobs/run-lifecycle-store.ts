// job_runs, the run life cycle: what workers, the outbox and its relay, and operators' cancel and
// retry write (and the one-run read they decide on). Every state change is a conditional update, so two
// instances (or a worker and an operator) can never both move a run from the same state. What /ops
// lists and counts is read in ops-reads-store.ts.
import type { Actor } from '../audit/service';
import { prepared, runPrepared } from '../platform/prepared';
import { deleteInBatches } from '../platform/batches';
import { ERASED } from './payload-store';
import type { Db } from '../platform/database';

export type JobState = 'scheduled' | 'available' | 'running' | 'retryable' | 'completed' | 'cancelled' | 'discarded';
export const JOB_STATES: JobState[] = ['scheduled', 'available', 'running', 'retryable', 'completed', 'cancelled', 'discarded'];
export const WAITING_STATES: JobState[] = ['scheduled', 'available', 'retryable'];
export const FINAL_STATES: JobState[] = ['completed', 'cancelled', 'discarded'];
export const LIVE_STATES: JobState[] = ['scheduled', 'available', 'retryable', 'running'];

export interface JobRunError {
  at: string;
  attempt: number;
  message: string;
}

export interface JobRun {
  id: number;
  kind: string;
  queue: string;
  priority: number;
  state: JobState;
  attempt: number;
  maxAttempts: number;
  timeoutMs: number;
  payload: Record<string, unknown>;
  errors: JobRunError[];
  createdAt: Date;
  scheduledAt: Date;
  attemptedAt: Date | null;
  finalizedAt: Date | null;
  handedOverAt: Date | null;
  actorKind: Actor['kind'];
  actorId: string | null;
  requestId: string | null;
  /** The W3C traceparent of the request or run that enqueued it (tracing on), which its attempts' spans continue. */
  traceparent: string | null;
}

/** A job_runs row as pg returns it (the id is a bigint, read as a string). */
export interface JobRunRecord {
  id: string | number;
  kind: string;
  queue: string;
  priority: number;
  state: JobRun['state'];
  attempt: number;
  max_attempts: number;
  timeout_ms: number;
  payload: Record<string, unknown>;
  errors: JobRunError[];
  created_at: Date;
  scheduled_at: Date;
  attempted_at: Date | null;
  finalized_at: Date | null;
  handed_over_at: Date | null;
  actor_kind: JobRun['actorKind'];
  actor_id: string | null;
  request_id: string | null;
  traceparent: string | null;
}

// The one mapping of a job_runs row to a JobRun, the /ops reads included.
export function toRun(row: JobRunRecord): JobRun {
  return {
    id: Number(row.id),
    kind: row.kind,
    queue: row.queue,
    priority: row.priority,
    state: row.state,
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    payload: row.payload,
    errors: row.errors,
    createdAt: row.created_at,
    scheduledAt: row.scheduled_at,
    attemptedAt: row.attempted_at,
    finalizedAt: row.finalized_at,
    handedOverAt: row.handed_over_at,
    actorKind: row.actor_kind,
    actorId: row.actor_id,
    requestId: row.request_id,
    traceparent: row.traceparent,
  };
}

export interface NewRun {
  kind: string;
  queue: string;
  priority: number;
  maxAttempts: number;
  timeoutMs: number;
  payload: Record<string, unknown>;
  scheduledAt: Date;
  now: Date;
  actorKind: Actor['kind'];
  actorId: string | null;
  requestId: string | null;
  /** Absent: none (tracing off, or no span enqueued it). */
  traceparent?: string | null;
}

// Ids are drawn in the statement's first step, beside each row's position in the input
// (`with ordinality`), and answered as (position, id) pairs: nothing assumes the order in which
// the insert or its `returning` produces rows. The insert runs to completion even though the
// final select reads only `v` (a data-modifying CTE always does); if it fails, so does the whole.
// The rows travel as one JSON array (V8's JSON.stringify, each payload inside it as it is): pg's
// encoding of thirteen array parameters cost ~2 µs more of CPU per run.
const INSERT_RUNS = prepared(
  'job_runs.insert',
  `with v as materialized (
     select nextval('job_runs_id_seq') as id, u.*
     from rows from (json_to_recordset($1::json) as (k text, q text, p int, s text, m int, t int, d jsonb, c timestamptz, a timestamptz, ak text, ai text, r text, tp text))
       with ordinality as u(kind, queue, priority, state, max_attempts, timeout_ms, payload, created_at, scheduled_at, actor_kind, actor_id, request_id, traceparent, position)
   ), inserted as (
     insert into job_runs (id, kind, queue, priority, state, max_attempts, timeout_ms, payload, created_at, scheduled_at, actor_kind, actor_id, request_id, traceparent)
     select id, kind, queue, priority, state, max_attempts, timeout_ms, payload, created_at, scheduled_at, actor_kind, actor_id, request_id, traceparent from v
   )
   select position, id from v`,
);

const initialState = (run: NewRun): JobState => (run.scheduledAt > run.now ? 'scheduled' : 'available');

/** Inserts runs in one statement (the rows as one JSON parameter); answers them in the order given. */
export async function insertRuns(db: Db, runs: NewRun[]): Promise<JobRun[]> {
  if (!runs.length) return [];
  const rows = await runPrepared<{ position: string; id: string }>(db, INSERT_RUNS, [
    JSON.stringify(
      runs.map((r) => ({
        k: r.kind,
        q: r.queue,
        p: r.priority,
        s: initialState(r),
        m: r.maxAttempts,
        t: r.timeoutMs,
        d: r.payload,
        c: r.now,
        a: r.scheduledAt,
        ak: r.actorKind,
        ai: r.actorId,
        r: r.requestId,
        tp: r.traceparent ?? null,
      })),
    ),
  ]);
  // Each id goes to the input row at its position (1-based); the rest of each row is what was sent.
  const ids = new Array<number>(runs.length);
  for (const row of rows) ids[Number(row.position) - 1] = Number(row.id);
  return runs.map((run, i) => ({
    id: ids[i]!,
    kind: run.kind,
    queue: run.queue,
    priority: run.priority,
    state: initialState(run),
    attempt: 0,
    maxAttempts: run.maxAttempts,
    timeoutMs: run.timeoutMs,
    payload: run.payload,
    errors: [],
    createdAt: run.now,
    scheduledAt: run.scheduledAt,
    attemptedAt: null,
    finalizedAt: null,
    handedOverAt: null,
    actorKind: run.actorKind,
    actorId: run.actorId,
    requestId: run.requestId,
    traceparent: run.traceparent ?? null,
  }));
}

export async function getRun(db: Db, id: number): Promise<JobRun | null> {
  const row = await db('job_runs').where({ id }).first();
  return row ? toRun(row) : null;
}

/**
 * Rows a worker is starting right now are skipped, not waited for: starting a run marks it handed
 * over too (see `writeAttempts`), and a row left unmarked is only handed over again (harmless).
 */
export async function markHandedOver(db: Db, ids: number[], now: Date): Promise<void> {
  if (!ids.length) return;
  await db.raw(
    `update job_runs set handed_over_at = ?
     where id in (select id from job_runs where id = any(?::bigint[]) and handed_over_at is null for update skip locked)`,
    [now, ids],
  );
}

/** The outbox: runs waiting that no worker started and the sweeper has not marked (the predicate of job_runs_outbox_idx). */
const outbox = (db: Db) => db('job_runs').whereNull('handed_over_at').whereIn('state', ['scheduled', 'available']);

/** Runs committed but never handed to BullMQ (Redis was down, or the process died in between). */
export async function findNotHandedOver(db: Db, olderThan: Date, limit: number): Promise<JobRun[]> {
  const rows = await outbox(db).where('created_at', '<', olderThan).orderBy('id').limit(limit);
  return rows.map(toRun);
}

/** The outbox's runs already due, for metrics: how many, and how long the oldest has been due. */
export async function outboxBacklog(db: Db, now: Date): Promise<{ backlog: number; oldestAgeSeconds: number }> {
  const row = (await outbox(db)
    .where('scheduled_at', '<=', now)
    .first(db.raw('count(*)::int as backlog'), db.raw('min(scheduled_at) as oldest'))) as { backlog: number; oldest: Date | null };
  return { backlog: row.backlog, oldestAgeSeconds: row.oldest ? Math.max(0, (now.getTime() - row.oldest.getTime()) / 1000) : 0 };
}

/**
 * Runs handed over that BullMQ should be working on but may have lost (Redis restarted without its
 * data, a job given up by BullMQ before its attempt reached the database): waiting and due since
 * before `dueBefore`, or `running` for longer than their timeout plus `graceMs`.
 */
export async function findOverdue(db: Db, opts: { dueBefore: Date; now: Date; graceMs: number; limit: number }): Promise<JobRun[]> {
  const rows = await db('job_runs')
    .whereNotNull('handed_over_at')
    .where((q) =>
      q
        .where((w) => w.whereIn('state', ['scheduled', 'available', 'retryable']).where('scheduled_at', '<', opts.dueBefore))
        .orWhere((w) =>
          w.where('state', 'running').whereRaw("attempted_at + (timeout_ms + ?) * interval '1 millisecond' < ?", [opts.graceMs, opts.now]),
        ),
    )
    .orderBy('id')
    .limit(opts.limit);
  return rows.map(toRun);
}

/**
 * A payload may carry secrets for its handler under a top-level `secret` key (a one-time code an
 * email must show): they are removed in the same statement that finalizes the run (completed,
 * cancelled, discarded), so no secret outlives the run that needed it. Only a live run — the one
 * a worker reads when it starts an attempt — still holds them. `secret_cleared` says a secret was
 * there: a retry could not do the run's work again (see `payloadCleared`).
 */
const withoutSecret = (payload: string) =>
  `case when ${payload} -> 'secret' is not null then ${payload} - 'secret' || '{"secret_cleared": true}'::jsonb else ${payload} end`;

/** Why a finalized run cannot do its work again: its secret, or the address it concerned, was erased. */
export function payloadCleared(run: JobRun): 'secret' | 'erased' | null {
  if (run.payload.secret_cleared === true) return 'secret';
  if (run.payload.to === ERASED) return 'erased';
  return null;
}

/** What a worker needs of a run it starts. */
export type StartedRun = Pick<JobRun, 'id' | 'kind' | 'attempt' | 'maxAttempts' | 'timeoutMs' | 'payload' | 'traceparent'>;

// Every right-hand side sees the row as it was before this update.
const SPENT = "r.state = 'running' and r.attempt >= r.max_attempts";
// Both updates in one statement (one round trip and one commit for a worker's batch); the caller
// keeps the two id lists disjoint, as one statement may not change a row twice.
const WRITE_ATTEMPTS = prepared(
  'job_runs.write_attempts',
  `with completed as (
     update job_runs r set state = 'completed', finalized_at = $3, payload = ${withoutSecret('r.payload')}
     where r.id = any($2::bigint[]) and r.state = 'running'
     returning r.id
   ), started as (
     update job_runs r set
       errors = case when r.state = 'running'
         then r.errors || jsonb_build_array(jsonb_build_object('at', $4::text, 'attempt', r.attempt, 'message', 'the worker running this attempt stopped before it finished'))
         else r.errors end,
       state = case when ${SPENT} then 'discarded' else 'running' end,
       attempt = case when ${SPENT} then r.attempt else r.attempt + 1 end,
       attempted_at = case when ${SPENT} then r.attempted_at else $3 end,
       finalized_at = case when ${SPENT} then $3 else r.finalized_at end,
       payload = case when ${SPENT} then ${withoutSecret('r.payload')} else r.payload end,
       handed_over_at = coalesce(r.handed_over_at, $3)
     where r.id = any($1::bigint[]) and r.state in ('scheduled', 'available', 'retryable', 'running')
     returning r.id, r.kind, r.state, r.attempt, r.max_attempts, r.timeout_ms, r.payload, r.traceparent
   )
   select id, kind, attempt, max_attempts, timeout_ms, payload, traceparent, null as completed from started where state = 'running'
   union all
   select null, null, null, null, null, null, null, string_agg(id::text, ',') from completed having count(*) > 0`,
);

interface StartedRow {
  id: string;
  kind: string;
  attempt: number;
  max_attempts: number;
  timeout_ms: number;
  payload: Record<string, unknown>;
  traceparent: string | null;
  /** Set on the one row that lists the runs completed (ids joined by commas); the others are runs started. */
  completed: string | null;
}

/**
 * Starts attempts and ends others as `completed`, in one statement at `at` (a worker's batch).
 * A run found `running` when it starts was abandoned by a worker that stopped (BullMQ hands a
 * stalled job to another worker): that attempt is recorded as failed first, and when it was the
 * last one the run is `discarded` instead. `started`: the runs now `running` (one missing has
 * nothing to run: cancelled, finalized, attempts spent or unknown); `completed`: the runs that
 * were `running` and are now `completed`. No id may be in both lists, or twice in one.
 */
export async function writeAttempts(
  db: Db,
  batch: { start: number[]; complete: number[]; at: Date },
): Promise<{ started: Map<number, StartedRun>; completed: Set<number> }> {
  const idList = (ids: number[]) => `{${ids.join(',')}}`;
  // A row per run started (one that was discarded instead is not answered: it has nothing to run),
  // and at most one row listing the runs completed (a row per run cost ~2 µs each to read).
  const rows = await runPrepared<StartedRow>(db, WRITE_ATTEMPTS, [idList(batch.start), idList(batch.complete), batch.at, batch.at.toISOString()]);
  const started = new Map<number, StartedRun>();
  const completed = new Set<number>();
  for (const row of rows) {
    if (row.completed !== null) {
      for (const id of row.completed.split(',')) completed.add(Number(id));
      continue;
    }
    const id = Number(row.id);
    started.set(id, {
      id,
      kind: row.kind,
      attempt: row.attempt,
      maxAttempts: row.max_attempts,
      timeoutMs: row.timeout_ms,
      payload: row.payload,
      traceparent: row.traceparent,
    });
  }
  return { started, completed };
}

/** Records a failed attempt: `retryable` at `retryAt`, or `discarded` (secrets removed) when attempts are spent. */
export async function failAttempt(db: Db, id: number, error: JobRunError, retryAt: Date | null): Promise<JobRun | null> {
  const [row] = await db('job_runs')
    .where({ id, state: 'running' })
    .update({
      errors: db.raw('errors || ?::jsonb', [JSON.stringify([error])]),
      state: retryAt ? 'retryable' : 'discarded',
      scheduled_at: retryAt ?? db.raw('scheduled_at'),
      finalized_at: retryAt ? null : error.at,
      ...(retryAt ? {} : { payload: db.raw(withoutSecret('payload')) }),
    })
    .returning('*');
  return row ? toRun(row) : null;
}

/**
 * `scheduled` and `retryable` runs whose time has come are `available` (due, waiting for a worker).
 * BullMQ usually starts them first; this records the wait when workers are busy. Returns how many.
 */
export async function makeDueAvailable(db: Db, now: Date, limit = 1000): Promise<number> {
  return db('job_runs')
    .whereIn('id', db('job_runs').select('id').whereIn('state', ['scheduled', 'retryable']).where('scheduled_at', '<=', now).limit(limit))
    .whereIn('state', ['scheduled', 'retryable'])
    .update({ state: 'available' });
}

/** Cancels a run in one of `from` (secrets removed); null when it was in none of them (it moved on meanwhile). */
export async function cancelRun(db: Db, id: number, from: JobState[], now: Date): Promise<JobRun | null> {
  const [row] = await db('job_runs')
    .where({ id })
    .whereIn('state', from)
    .update({ state: 'cancelled', finalized_at: now, payload: db.raw(withoutSecret('payload')) })
    .returning('*');
  return row ? toRun(row) : null;
}

/**
 * Makes a waiting or finalized run available now, keeping its attempts (one more if they are spent).
 * It is back in the outbox: what BullMQ holds for it (nothing, a finished job, or a job delayed for
 * its old schedule) does not start it now, and when Redis cannot be told at once the sweeper must.
 */
export async function makeAvailable(db: Db, id: number, now: Date): Promise<JobRun | null> {
  const [row] = await db('job_runs')
    .where({ id })
    .whereIn('state', ['scheduled', 'retryable', 'completed', 'cancelled', 'discarded'])
    .update({
      state: 'available',
      scheduled_at: now,
      finalized_at: null,
      max_attempts: db.raw('greatest(max_attempts, attempt + 1)'),
      handed_over_at: null,
    })
    .returning('*');
  return row ? toRun(row) : null;
}

/** Deletes finalized runs older than `before`, `batch` rows at a time; returns how many. */
export async function deleteFinalizedBefore(db: Db, before: Date, batch: number): Promise<number> {
  return deleteInBatches(db, 'job_runs', (q) => q.whereNotNull('finalized_at').where('finalized_at', '<', before), batch);
}
