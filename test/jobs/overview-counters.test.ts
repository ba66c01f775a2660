// The rolling counters behind GET /ops/jobs/overview and GET /ops/queues (the job_run_counters
// migration): whatever writes job_runs — the job system's own transitions, the workers' batches,
// retention deletes, concurrent transactions that commit or roll back — the counters equal a plain
// GROUP BY over job_runs, and the overview answers what the rows say.
import type { Knex } from 'knex';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { waitFor } from '../support/wait';
import type { AppContext } from '../../src/app-context';
import type { JobKind } from '../../src/jobs/kinds';
import type { JobConfig } from '../../src/jobs/config';
import { createDatabase } from '../../src/platform/database';
import { appDatabase, provisionAppRole } from '../../src/platform/database-roles';
import * as store from '../../src/jobs/run-lifecycle-store';
import * as counters from '../../db/migrations/20261125010000_job_run_counters';

const DAY_MS = 24 * 3600 * 1000;
const MINUTE_MS = 60_000;

/** Runs of `test.gated` wait here until the test releases them (or their signal aborts). */
const gates = new Map<number, () => void>();

const config = (over: Partial<JobConfig>): JobConfig => ({ enabled: true, max_attempts: 1, priority: 0, queue: 'default', schedule: null, timeout: '30s', ...over });
const kind = (name: string, over: Partial<JobConfig>, handle: JobKind<AppContext>['handle']): JobKind<AppContext> => ({
  name,
  description: `test kind ${name}`,
  defaults: config(over),
  needsPayload: false,
  handle,
});
const attempts = new Map<number, number>();
const kinds: JobKind<AppContext>[] = [
  kind('test.ok', {}, async () => undefined),
  kind('test.fails', { max_attempts: 2, queue: 'maintenance' }, async (_p, { run }) => {
    throw new Error(`boom ${run.attempt}`);
  }),
  kind('test.flaky', { max_attempts: 2 }, async (_p, { run }) => {
    attempts.set(run.id, (attempts.get(run.id) ?? 0) + 1);
    if (attempts.get(run.id) === 1) throw new Error('flaky');
  }),
  kind('test.gated', {}, (_p, { run, signal }) => new Promise<void>((resolve, reject) => {
    gates.set(run.id, resolve);
    signal.addEventListener('abort', () => reject(new Error('aborted')));
  })),
];

let t: TestApp;
let auth: string;
const system = { actor: { kind: 'system' as const, id: null } };

beforeAll(async () => {
  t = await startTestApp({}, { workers: true, jobKinds: kinds, jobTiming: { backoffMs: 20 } });
  auth = (await signedInUser(t.ctx, { operator: true })).auth;
});
afterAll(async () => {
  for (const release of gates.values()) release();
  await t.close();
});

async function enqueue(kindName: string, n = 1, delayMs?: number) {
  const runs = await t.ctx.jobs.enqueueMany(t.ctx.db, Array.from({ length: n }, () => ({ kind: kindName, payload: {}, delayMs })), system);
  await t.ctx.jobs.handOver(runs);
  return runs;
}
/** A run as the outbox writes it (`store.insertRuns`), of a kind no worker runs unless it is one of this file's. */
const newRun = (kindName: string, over: Partial<store.NewRun> = {}): store.NewRun => ({
  kind: kindName, queue: 'default', priority: 0, maxAttempts: 1, timeoutMs: 1_000, payload: {},
  scheduledAt: t.clock.now, now: t.clock.now, actorKind: 'system', actorId: null, requestId: null, ...over,
});
const waitForStates = (ids: number[], state: store.JobState) =>
  waitFor(`runs ${ids.join(',')} to be ${state}`, async () => (await t.ctx.db('job_runs').whereIn('id', ids).whereNot({ state }).count('* as n').first())!.n === 0, 15_000);

/** A failed attempt as the service records it, at `at`. */
const failure = (at: Date, attempt = 1) => ({ at: at.toISOString(), attempt, message: 'boom' });

/**
 * The counters and what they count, read in one statement (one snapshot, so the comparison holds
 * even while workers write): runs per (kind, queue, state), and failed attempts per minute of
 * their `at` (the counters keep two days, by the database's clock).
 */
async function expectCountersMatch(db: Knex = t.ctx.db) {
  const { rows } = await db.raw(`
    select
      (select coalesce(json_agg(x order by kind, queue, state), '[]') from (
        select kind, queue, state, count(*)::int as n from job_runs group by 1, 2, 3) x) as runs,
      (select coalesce(json_agg(x order by kind, queue, state), '[]') from (
        select kind, queue, state, sum(n)::int as n from job_run_counts group by 1, 2, 3 having sum(n) <> 0) x) as counted_runs,
      (select coalesce(json_agg(x order by bucket), '[]') from (
        select date_bin('1 minute', (e->>'at')::timestamptz, timestamptz 'epoch') as bucket, count(*)::int as n
        from job_runs, jsonb_array_elements(errors) e
        where (e->>'at')::timestamptz >= date_bin('1 minute', now() - interval '2 days', timestamptz 'epoch')
        group by 1) x) as failures,
      (select coalesce(json_agg(x order by bucket), '[]') from (
        select bucket, sum(n)::int as n from job_failure_counts group by 1 having sum(n) <> 0) x) as counted_failures`);
  const [row] = rows;
  expect(row.counted_runs).toEqual(row.runs);
  expect(row.counted_failures).toEqual(row.failures);
  return row as { runs: { kind: string; queue: string; state: string; n: number }[] };
}

/** GET /ops/jobs/overview against plain queries over job_runs (call it when no worker is busy). */
async function expectOverviewRight() {
  const body = (await t.http.get('/ops/jobs/overview').set('Authorization', auth).expect(200)).body;
  const { runs } = await expectCountersMatch();
  const zero = () => ({ scheduled: 0, available: 0, running: 0, retryable: 0, completed: 0, cancelled: 0, discarded: 0 });
  const byState: Record<string, number> = zero();
  const byKind = new Map<string, Record<string, number>>(t.ctx.jobs.kinds().map((k) => [k.name, zero()]));
  const queues = new Map<string, Record<string, number>>(['default', 'mail', 'maintenance'].map((q) => [q, { available: 0, running: 0, scheduled: 0, retryable: 0 }]));
  for (const { kind, queue, state, n } of runs) {
    byState[state]! += n;
    if (byKind.has(kind)) byKind.get(kind)![state]! += n;
    if (state in queues.get(queue)!) queues.get(queue)![state]! += n;
  }
  expect(body.by_state).toEqual(byState);
  expect(body.by_kind).toEqual([...byKind].map(([kind, counts]) => ({ kind, counts })).sort((a, b) => a.kind.localeCompare(b.kind)));
  expect(body.queues.map((q: { name: string; counts: unknown }) => [q.name, q.counts])).toEqual([...queues]);
  const listed = (await t.http.get('/ops/queues').set('Authorization', auth).expect(200)).body.items;
  expect(listed.map((q: { counts: unknown }) => q.counts)).toEqual(body.queues.map((q: { counts: unknown }) => q.counts));

  // Failed attempts from the minute that holds "24 hours ago" by the service's clock onwards.
  const since = new Date(Math.floor((t.clock.now.getTime() - DAY_MS) / MINUTE_MS) * MINUTE_MS);
  const { rows } = await t.ctx.db.raw(
    `select count(*)::int as n from job_runs, jsonb_array_elements(errors) e where (e->>'at')::timestamptz >= ?`,
    [since],
  );
  expect(body.failures_last_24h).toBe(rows[0].n);
  const oldest = await t.ctx.db('job_runs').where({ state: 'available' }).min('scheduled_at as at').first();
  expect(body.oldest_waiting_age_seconds).toBe(oldest?.at ? Math.max(0, Math.floor((t.clock.now.getTime() - oldest.at.getTime()) / 1000)) : null);
  return body;
}

it('the migration counts the runs already there (backfill), and its triggers keep the counts from then on', async () => {
  // Rows written while the counters do not exist: down, write, up (in one transaction, as migrations run).
  const owner = createDatabase(t.ctx.config.databaseUrl!, 1);
  try {
    const [done] = await enqueue('test.ok');
    await waitForStates([done!.id], 'completed');
    await owner.transaction(async (trx) => {
      await counters.down(trx);
      const [a, b] = await store.insertRuns(trx, [newRun('test.ok'), newRun('test.ok', { scheduledAt: new Date(t.clock.now.getTime() + DAY_MS) })]);
      await trx('job_runs').where({ id: a!.id }).update({ state: 'discarded', attempt: 2, finalized_at: t.clock.now, errors: JSON.stringify([failure(t.clock.now), failure(t.clock.now, 2)]) });
      await trx('job_runs').where({ id: b!.id }).update({ state: 'retryable', attempt: 1, errors: JSON.stringify([failure(new Date(t.clock.now.getTime() - 3 * DAY_MS))]) });
      await counters.up(trx);
    });
    await provisionAppRole(owner, t.ctx.config); // the grants every start gives, on the new tables
  } finally {
    await owner.destroy();
  }
  const { runs } = await expectCountersMatch();
  expect(runs).toEqual(expect.arrayContaining([{ kind: 'test.ok', queue: 'default', state: 'discarded', n: 1 }, { kind: 'test.ok', queue: 'default', state: 'retryable', n: 1 }]));
  await expectOverviewRight();
});

it('follows runs through the job system: enqueue, completion, retries, discards, cancels and retries by operators', async () => {
  const before = await expectOverviewRight();
  const ok = await enqueue('test.ok', 5);
  const fails = await enqueue('test.fails', 3);
  const flaky = await enqueue('test.flaky', 2);
  const later = await enqueue('test.ok', 2, DAY_MS);
  const [gated] = await enqueue('test.gated');
  // Counters hold while the workers write.
  await expectCountersMatch();

  await waitForStates(ok.map((r) => r.id), 'completed');
  await waitForStates(fails.map((r) => r.id), 'discarded');
  await waitForStates(flaky.map((r) => r.id), 'completed');
  await waitFor('the gated run to start', async () => gates.get(gated!.id));
  let body = await expectOverviewRight();
  expect(body.by_state.running).toBe(before.by_state.running + 1);
  expect(body.by_state.scheduled).toBe(before.by_state.scheduled + 2);
  expect(body.by_state.discarded).toBe(before.by_state.discarded + 3);
  // Two failed attempts per discarded run, one per flaky run.
  expect(body.failures_last_24h).toBe(before.failures_last_24h + 3 * 2 + 2);
  expect(body.by_kind.find((k: { kind: string }) => k.kind === 'test.fails').counts.discarded).toBe(3);
  expect(body.queues.find((q: { name: string }) => q.name === 'default').counts.running).toBe(1);

  // Cancels: a waiting run at once, the running one through its signal; a retry of a discarded run.
  await t.http.post(`/ops/jobs/runs/${later[0]!.id}/cancel`).set('Authorization', auth).expect(200);
  await t.http.post(`/ops/jobs/runs/${gated!.id}/cancel`).set('Authorization', auth).expect(202);
  await waitForStates([gated!.id], 'cancelled');
  await t.http.post(`/ops/jobs/runs/${fails[0]!.id}/retry`).set('Authorization', auth).expect(200);
  await waitFor('the retried run to fail again', async () => (await store.getRun(t.ctx.db, fails[0]!.id))!.errors.length === 3);
  await waitForStates([fails[0]!.id], 'discarded');
  body = await expectOverviewRight();
  expect(body.by_state.cancelled).toBe(before.by_state.cancelled + 2);
  expect(body.by_state.scheduled).toBe(before.by_state.scheduled + 1);
  expect(body.failures_last_24h).toBe(before.failures_last_24h + 3 * 2 + 2 + 1);
});

it('follows batched writes: a worker batch of starts and completions, due runs made available, hand-over marks', async () => {
  // Runs of a kind no worker knows (nothing takes them from BullMQ), written as the workers write.
  const now = t.clock.now;
  const runs = await store.insertRuns(t.ctx.db, Array.from({ length: 300 }, (_, i) =>
    newRun(i % 3 ? 'batch.a' : 'batch.b', { queue: i % 2 ? 'default' : 'mail', scheduledAt: new Date(now.getTime() + (i % 4 ? 0 : MINUTE_MS)) }),
  ));
  const ids = runs.map((r) => r.id);
  await store.markHandedOver(t.ctx.db, ids, now); // no sweep hands them over now
  await expectCountersMatch();
  const first = await store.writeAttempts(t.ctx.db, { start: ids.slice(0, 200), complete: [], at: now });
  expect(first.started.size).toBe(200);
  await expectCountersMatch();
  // Completions and starts in one statement; a run found running again is a stalled attempt (an error, then discarded).
  const second = await store.writeAttempts(t.ctx.db, { start: [...ids.slice(100, 150), ...ids.slice(200, 250)], complete: ids.slice(0, 100), at: now });
  expect([second.started.size, second.completed.size]).toEqual([50, 100]);
  await expectCountersMatch();
  expect(await store.makeDueAvailable(t.ctx.db, new Date(now.getTime() + 2 * MINUTE_MS))).toBeGreaterThan(0);
  await expectCountersMatch();
  const left = (await t.ctx.db('job_runs').whereIn('id', ids).whereIn('state', store.LIVE_STATES).select('id')).map((r) => Number(r.id));
  await t.ctx.db('job_runs').whereIn('id', left).update({ state: 'cancelled', finalized_at: now });
  await expectOverviewRight();
});

it('follows failures recorded by hand at any time: the 24-hour window by the service clock, to the minute', async () => {
  const before = (await expectOverviewRight()).failures_last_24h;
  const now = t.clock.now.getTime();
  const [run] = await store.insertRuns(t.ctx.db, [newRun('window.sample')]);
  const errors = [now - 23 * 3600_000, now - DAY_MS + MINUTE_MS, now - DAY_MS - 2 * MINUTE_MS, now - 30 * 3600_000].map((ms, i) => failure(new Date(ms), i + 1));
  await t.ctx.db('job_runs').where({ id: run!.id }).update({ state: 'discarded', finalized_at: t.clock.now, errors: JSON.stringify(errors) });
  expect((await expectOverviewRight()).failures_last_24h).toBe(before + 2);
  // Entries replaced (not only appended) move between buckets.
  await t.ctx.db('job_runs').where({ id: run!.id }).update({ errors: JSON.stringify([failure(t.clock.now)]) });
  expect((await expectOverviewRight()).failures_last_24h).toBe(before + 1);
  // Malformed entries, or `errors` that is not an array, count for nothing and do not fail the write.
  for (const errors of [[{ at: 'not a time', attempt: 1 }, 'x'], { at: t.clock.now.toISOString() }]) {
    await t.ctx.db('job_runs').where({ id: run!.id }).update({ errors: JSON.stringify(errors) });
    expect((await t.http.get('/ops/jobs/overview').set('Authorization', auth).expect(200)).body.failures_last_24h).toBe(before);
  }
  await t.ctx.db('job_runs').where({ id: run!.id }).update({ errors: '[]' });
  expect((await expectOverviewRight()).failures_last_24h).toBe(before);
});

it('retention-style deletes of finalized runs, in batches, subtract what they delete', async () => {
  const finalized = Number((await t.ctx.db('job_runs').whereIn('state', store.FINAL_STATES).count('* as n').first())!.n);
  const deleted = await store.deleteFinalizedBefore(t.ctx.db, new Date(t.clock.now.getTime() + MINUTE_MS), 37);
  expect(deleted).toBe(finalized);
  const body = await expectOverviewRight();
  expect(body.by_state).toMatchObject({ completed: 0, cancelled: 0, discarded: 0 });
  expect(body.failures_last_24h).toBe(0); // every failed attempt of the last day was in a finalized run
});

describe('concurrent transactions', () => {
  let pool: Knex;
  const opened: Knex.Transaction[] = [];
  beforeAll(() => {
    pool = createDatabase(appDatabase(t.ctx.config, t.ctx.config.databaseUrl!), 10);
  });
  // A failed test leaves none open (their locks would hold the next ones).
  afterEach(() => Promise.all(opened.splice(0).filter((trx) => !trx.isCompleted()).map((trx) => trx.rollback())));
  afterAll(() => pool.destroy());

  /** Opens `n` transactions (a lock wait fails within 3 s instead of hanging). */
  const open = (n: number) =>
    Promise.all(Array.from({ length: n }, async () => {
      const trx = await pool.transaction();
      opened.push(trx);
      await trx.raw("set local lock_timeout = '3s'");
      return trx;
    }));

  it('writers of the same counters never wait for one another; commits count, rollbacks do not', async () => {
    const trxs = await open(8);
    // Every transaction holds a counter row of both groups before any commits, half of them taking
    // them in the opposite order (a deadlock if they waited for each other's rows).
    const inserted = await Promise.all(trxs.map(async (trx, i) => {
      const order = i % 2 ? ['concurrent.a', 'concurrent.b'] : ['concurrent.b', 'concurrent.a'];
      const runs = [];
      for (const k of order) runs.push(...(await store.insertRuns(trx, [newRun(k), newRun(k, { scheduledAt: new Date(t.clock.now.getTime() + DAY_MS) })])));
      return runs;
    }));
    await Promise.all(trxs.map((trx, i) => trx('job_runs').whereIn('id', inserted[i]!.map((r) => r.id)).where({ state: 'available' }).update({ state: 'running', attempt: 1 })));
    await Promise.all(trxs.map((trx, i) => (i < 6 ? trx.commit() : trx.rollback())));
    const { runs } = await expectCountersMatch();
    expect(runs.filter((r) => r.kind.startsWith('concurrent.'))).toEqual([
      { kind: 'concurrent.a', queue: 'default', state: 'running', n: 6 },
      { kind: 'concurrent.a', queue: 'default', state: 'scheduled', n: 6 },
      { kind: 'concurrent.b', queue: 'default', state: 'running', n: 6 },
      { kind: 'concurrent.b', queue: 'default', state: 'scheduled', n: 6 },
    ]);
    // Each group got a row per transaction that wrote it at the same time.
    const shards = await t.ctx.db('job_run_counts').where({ kind: 'concurrent.a', state: 'scheduled' }).count('* as n').first();
    expect(Number(shards!.n)).toBe(6);

    // The next writers reuse those rows (any that no one holds), whatever they add or take away.
    const again = await open(4);
    await Promise.all(again.map((trx, i) => trx('job_runs').whereIn('id', inserted[i]!.map((r) => r.id)).delete()));
    await Promise.all(again.map((trx) => trx.commit()));
    expect(Number((await t.ctx.db('job_run_counts').where({ kind: 'concurrent.a', state: 'scheduled' }).count('* as n').first())!.n)).toBe(Number(shards!.n));
    await expectOverviewRight();
  });
});

it('a truncate of job_runs empties the counters', async () => {
  const owner = createDatabase(t.ctx.config.databaseUrl!, 1);
  try {
    await owner.raw('truncate job_runs');
  } finally {
    await owner.destroy();
  }
  expect(await t.ctx.db('job_run_counts').count('* as n').first()).toEqual({ n: 0 });
  expect(await t.ctx.db('job_failure_counts').count('* as n').first()).toEqual({ n: 0 });
  await expectOverviewRight();
});
