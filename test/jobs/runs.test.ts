// Core job-run semantics (DESIGN 5): every state transition, cancel (waiting, running, from another
// instance, finalized), retry, timeout and stalled attempts — read through GET /ops/jobs/runs/{id},
// which is what operators see, and checked against BullMQ and the number of handler invocations.
import type { RequestListener } from 'node:http';
import { startTestApp, startPeer, contractClient, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { createApp } from '../../src/app';
import type { AppContext } from '../../src/app-context';
import type { JobKind } from '../../src/jobs/kinds';
import type { JobConfig } from '../../src/jobs/config';
import * as store from '../../src/jobs/run-lifecycle-store';
import { bullJobId } from '../../src/jobs/system';
import { waitFor } from '../support/wait';

/** The backoff base this file's job system runs with: retries come after 50 ms, 100 ms… */
const BACKOFF_MS = 50;

// ----- test-only job kinds --------------------------------------------------------------------

/** Handler invocations per run id (one per attempt that reached the handler). */
const calls = new Map<number, number>();
/** The payload each attempt's handler received, per run id. */
const seen = new Map<number, unknown[]>();
const see = (id: number, payload: unknown) => seen.set(id, [...(seen.get(id) ?? []), payload]);
const count = (id: number) => {
  const n = (calls.get(id) ?? 0) + 1;
  calls.set(id, n);
  return n;
};
/** Runs of `test.gated` wait here until the test releases them (or their signal aborts). */
const gates = new Map<number, () => void>();
/** The abort reason each `test.gated` run observed on its signal. */
const aborted = new Map<number, unknown>();

const defaults = (over: Partial<JobConfig> = {}): JobConfig => ({
  enabled: true,
  max_attempts: 3,
  priority: 0,
  queue: 'default',
  schedule: null,
  timeout: '5s',
  ...over,
});
const kind = (name: string, config: Partial<JobConfig>, handle: JobKind<AppContext>['handle']): JobKind<AppContext> => ({
  name,
  description: `test kind ${name}`,
  defaults: defaults(config),
  needsPayload: false,
  handle,
});

/** Waits until the test releases the run (`gates`) or 20 s pass; `signal` rejects it on abort. */
const gate = (id: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const cap = setTimeout(resolve, 20_000);
    cap.unref();
    gates.set(id, () => {
      clearTimeout(cap);
      resolve();
    });
    signal?.addEventListener('abort', () => {
      clearTimeout(cap);
      aborted.set(id, signal.reason);
      reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
    });
  });

const kinds: JobKind<AppContext>[] = [
  kind('test.succeeds', {}, async (payload, { run }) => {
    count(run.id);
    see(run.id, payload);
  }),
  // Fails `payload.failures` times (default 1), then succeeds.
  kind('test.flaky', { max_attempts: 2 }, async (payload: { failures?: number }, { run }) => {
    const n = count(run.id);
    if (n <= (payload.failures ?? 1)) throw new Error(`flaky failure ${n}`);
  }),
  kind('test.fails', { max_attempts: 3 }, async (payload, { run }) => {
    see(run.id, payload);
    throw new Error(`boom ${count(run.id)}`);
  }),
  // Its first attempt waits until released by the test, then every attempt fails.
  kind('test.gated-fails', { timeout: '1m0s', max_attempts: 3 }, async (_p, { run }) => {
    const n = count(run.id);
    if (run.attempt === 1) await gate(run.id);
    throw new Error(`boom ${n}`);
  }),
  // Waits until released by the test or aborted (cancel); gives up after 20 s at most.
  kind('test.gated', { timeout: '1m0s', max_attempts: 1 }, async (payload, { run, signal }) => {
    count(run.id);
    see(run.id, payload);
    await gate(run.id, signal);
  }),
  // Waits until released by the test, ignoring its signal.
  kind('test.deaf', { timeout: '1m0s', max_attempts: 1 }, async (_p, { run }) => {
    count(run.id);
    await gate(run.id);
  }),
  // Waits until released by the test, ignoring its signal; its timeout is 1 s.
  kind('test.overruns', { timeout: '1s', max_attempts: 1 }, async (_p, { run }) => {
    count(run.id);
    await gate(run.id);
  }),
];

// ----- helpers ----------------------------------------------------------------------------------

let t: TestApp;
let auth: string;
const system = { actor: { kind: 'system' as const, id: null } };

beforeAll(async () => {
  t = await startTestApp({}, { workers: true, jobKinds: kinds, jobTiming: { backoffMs: BACKOFF_MS } });
  auth = (await signedInUser(t.ctx, { operator: true })).auth;
});
afterAll(async () => {
  for (const release of gates.values()) release();
  await t.close();
});
// A test that holds a queue paused (see `retryableHeld`) leaves it running for the next one.
afterEach(() => t.ctx.jobs.setPaused('default', false));

async function enqueue(kindName: string, payload: Record<string, unknown> = {}, opts: { delayMs?: number } = {}) {
  const run = await t.ctx.jobs.enqueue(t.ctx.db, kindName, payload, system, opts);
  await t.ctx.jobs.handOver([run]);
  return run;
}

async function apiRun(id: number, http = t.http) {
  return (await http.get(`/ops/jobs/runs/${id}`).set('Authorization', auth).expect(200)).body;
}
const waitForState = (id: number, state: string, timeoutMs?: number) =>
  waitFor(`run ${id} to be ${state}`, async () => {
    const run = await apiRun(id);
    return run.state === state ? run : null;
  }, timeoutMs);

const bullJob = (id: number, queue = 'default') => t.ctx.jobs.queues.get(queue)!.getJob(bullJobId(id));
const waitUntilBullForgets = (id: number, queue = 'default') =>
  waitFor(`BullMQ to drop job ${id}`, async () => !(await bullJob(id, queue)));
const waitForGate = (id: number) => waitFor(`run ${id} to reach its handler`, async () => gates.get(id));
const startOne = async (id: number) => (await store.writeAttempts(t.ctx.db, { start: [id], complete: [], at: t.clock.now })).started.get(id);
const payloadOf = async (id: number) => (await t.ctx.db('job_runs').where({ id }).first('payload')).payload;
const ms = (iso: string) => new Date(iso).getTime();

/**
 * A `test.gated-fails` run whose first attempt failed while the default queue is paused: the row is
 * `retryable` and BullMQ holds its retry (delayed or waiting) until the test resumes the queue.
 */
async function retryableHeld() {
  const run = await enqueue('test.gated-fails');
  const release = await waitForGate(run.id);
  await t.ctx.jobs.setPaused('default', true);
  release();
  await waitForState(run.id, 'retryable');
  await waitFor(`BullMQ to hold the retry of run ${run.id}`, async () => {
    const state = await (await bullJob(run.id))?.getState();
    return state !== undefined && state !== 'active' && state !== 'unknown';
  });
  return run;
}

const errorEntry = (attempt: number, message: string | RegExp) => ({
  at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
  attempt,
  message: typeof message === 'string' ? message : expect.stringMatching(message),
});

// ----- transitions ------------------------------------------------------------------------------

describe('state transitions', () => {
  it('available → running → completed, once, and BullMQ lets go of the job', async () => {
    // Enqueued inside a business transaction, handed over after commit.
    const run = await t.ctx.db.transaction((trx) => t.ctx.jobs.enqueue(trx, 'test.gated', {}, system));
    const before = await apiRun(run.id);
    expect(before).toMatchObject({ state: 'available', attempt: 0, attempted_at: null, finalized_at: null, errors: [], kind: 'test.gated', queue: 'default', actor_kind: 'system', actor_id: null });

    await t.ctx.jobs.handOver([run]);
    const release = await waitForGate(run.id);
    const running = await apiRun(run.id);
    expect(running).toMatchObject({ state: 'running', attempt: 1, finalized_at: null, errors: [] });
    expect(running.attempted_at).not.toBeNull();

    release();
    const done = await waitForState(run.id, 'completed');
    expect(done).toMatchObject({ attempt: 1, errors: [], max_attempts: 1 });
    expect(done.attempted_at).not.toBeNull();
    expect(done.finalized_at).not.toBeNull();
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(1);
    expect(await apiRun(run.id)).toEqual(done);
  });

  it('running → retryable → running → completed, with one error for the failed attempt', async () => {
    const run = await enqueue('test.flaky', { failures: 1 });
    const done = await waitForState(run.id, 'completed');
    expect(done).toMatchObject({ attempt: 2, max_attempts: 2, errors: [errorEntry(1, 'flaky failure 1')] });
    expect(done.finalized_at).not.toBeNull();
    // The retry was scheduled one backoff (the injected base) after the failure.
    expect(ms(done.scheduled_at) - ms(done.errors[0].at)).toBe(BACKOFF_MS);
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(2);
  });

  it('running → discarded once max_attempts are spent, one error per attempt', async () => {
    const run = await enqueue('test.fails');
    const done = await waitForState(run.id, 'discarded');
    expect(done).toMatchObject({
      attempt: 3,
      max_attempts: 3,
      errors: [errorEntry(1, 'boom 1'), errorEntry(2, 'boom 2'), errorEntry(3, 'boom 3')],
    });
    expect(done.finalized_at).not.toBeNull();
    // Exponential backoff: the last retry (after the second failure) waited twice the base.
    expect(ms(done.scheduled_at) - ms(done.errors[1].at)).toBe(2 * BACKOFF_MS);
    // BullMQ no longer holds the job: no further attempt can start.
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(3);
    expect((await apiRun(run.id)).state).toBe('discarded');
  });

  it('scheduled → available once due (waiting for a worker) → running → completed', async () => {
    const run = await enqueue('test.succeeds', {}, { delayMs: 60_000 });
    expect(await apiRun(run.id)).toMatchObject({ state: 'scheduled', attempt: 0, attempted_at: null });
    // Due by the clock while BullMQ still holds it back (workers busy, say): the sweeper records the wait.
    t.clock.advance(61_000);
    await t.ctx.jobs.sweep();
    expect(await apiRun(run.id)).toMatchObject({ state: 'available', attempt: 0, attempted_at: null });
    expect(calls.get(run.id)).toBeUndefined();
    await (await bullJob(run.id))!.promote(); // a worker becomes free
    const done = await waitForState(run.id, 'completed');
    expect(done).toMatchObject({ attempt: 1, errors: [] });
    expect(calls.get(run.id)).toBe(1);
  });

  it('retryable → available once its backoff has passed', async () => {
    const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.succeeds', {}, system);
    const retryAt = new Date(t.clock.now.getTime() + 10_000);
    const error = { at: t.clock.now.toISOString(), attempt: 1, message: 'boom' };
    await t.ctx.db('job_runs').where({ id: run.id }).update({ state: 'retryable', attempt: 1, attempted_at: t.clock.now, scheduled_at: retryAt, errors: JSON.stringify([error]), handed_over_at: t.clock.now });
    await store.makeDueAvailable(t.ctx.db, t.clock.now);
    expect((await apiRun(run.id)).state).toBe('retryable');
    expect(await store.makeDueAvailable(t.ctx.db, retryAt)).toBeGreaterThanOrEqual(1);
    expect(await apiRun(run.id)).toMatchObject({ state: 'available', attempt: 1, errors: [error], finalized_at: null });
    await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(200);
  });

  it('an attempt that outlives the timeout fails with "timed out after 1s"', async () => {
    const run = await enqueue('test.overruns');
    const release = await waitForGate(run.id);
    const done = await waitForState(run.id, 'discarded');
    // Ended by the timeout while its handler, which ignores the signal, is still waiting for the test.
    expect(done).toMatchObject({ attempt: 1, max_attempts: 1, errors: [errorEntry(1, /timed out after 1s/)] });
    release();
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(1);
    expect(await apiRun(run.id)).toEqual(done);
  });

  it('a run whose worker died mid-attempt records the stalled attempt and continues', async () => {
    // The row says `running` (attempt 1 started, then the process died); BullMQ re-delivers the job.
    const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.succeeds', {}, system);
    await t.ctx.db('job_runs').where({ id: run.id }).update({ state: 'running', attempt: 1, attempted_at: t.clock.now });
    await t.ctx.jobs.handOver([{ ...run, state: 'running', attempt: 1 }]);
    const done = await waitForState(run.id, 'completed');
    expect(done).toMatchObject({ attempt: 2, errors: [errorEntry(1, /stopped before it finished/)] });
    expect(calls.get(run.id)).toBe(1);
  });

  it('a stalled last attempt discards the run instead of starting an attempt it does not have', async () => {
    const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.succeeds', {}, system);
    await t.ctx.db('job_runs').where({ id: run.id }).update({ state: 'running', attempt: 3, attempted_at: t.clock.now });
    expect(await startOne(run.id)).toBeUndefined();
    const done = await apiRun(run.id);
    expect(done).toMatchObject({ state: 'discarded', attempt: 3, max_attempts: 3, errors: [errorEntry(3, /stopped before it finished/)] });
    expect(done.finalized_at).not.toBeNull();
    expect(calls.get(run.id)).toBeUndefined();
  });

  it('writeAttempts moves a waiting run to running and leaves finalized runs alone', async () => {
    const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.succeeds', {}, system);
    expect(await startOne(run.id)).toEqual({ id: run.id, kind: 'test.succeeds', attempt: 1, maxAttempts: 3, timeoutMs: 5_000, payload: {}, traceparent: null });
    expect(await apiRun(run.id)).toMatchObject({ state: 'running', attempt: 1, errors: [] });
    // A started run was handed over, whatever the producer managed to mark.
    expect((await t.ctx.db('job_runs').where({ id: run.id }).first()).handed_over_at).not.toBeNull();
    // Re-delivered while the row says running: the first attempt is recorded as stalled.
    expect(await startOne(run.id)).toMatchObject({ attempt: 2 });
    expect(await apiRun(run.id)).toMatchObject({ state: 'running', attempt: 2, errors: [{ attempt: 1 }] });
    expect((await store.writeAttempts(t.ctx.db, { start: [], complete: [run.id], at: t.clock.now })).completed).toEqual(new Set([run.id]));
    expect(await startOne(run.id)).toBeUndefined();
    expect((await apiRun(run.id)).state).toBe('completed');
  });

  it('one statement starts some runs and completes others, and answers each by id', async () => {
    const [waiting, cancelled, other, running] = await t.ctx.jobs.enqueueMany(
      t.ctx.db,
      [1, 2, 3, 4].map((n) => ({ kind: 'test.succeeds', payload: { n } })),
      system,
    );
    expect([waiting, cancelled, other, running].map((run) => run!.payload)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    await t.ctx.db('job_runs').where({ id: cancelled!.id }).update({ state: 'cancelled', finalized_at: t.clock.now });
    await startOne(running!.id);
    t.clock.advance(1_000);
    const at = t.clock.now;
    const { started, completed } = await store.writeAttempts(t.ctx.db, { start: [waiting!.id, cancelled!.id, other!.id], complete: [running!.id], at });
    expect([...started.keys()].sort()).toEqual([waiting!.id, other!.id].sort());
    expect(started.get(waiting!.id)).toMatchObject({ attempt: 1, payload: { n: 1 } });
    expect(completed).toEqual(new Set([running!.id]));
    expect(await apiRun(waiting!.id)).toMatchObject({ state: 'running', attempt: 1, attempted_at: at.toISOString() });
    expect(await apiRun(running!.id)).toMatchObject({ state: 'completed', finalized_at: at.toISOString() });
    expect((await apiRun(cancelled!.id)).state).toBe('cancelled');
    // A completion for a run that is no longer running changes nothing.
    expect((await store.writeAttempts(t.ctx.db, { start: [], complete: [cancelled!.id], at })).completed.size).toBe(0);
  });
});

// ----- cancel -----------------------------------------------------------------------------------

describe('cancel', () => {
  it('a scheduled run is cancelled at once (200) and leaves BullMQ', async () => {
    const run = await enqueue('test.succeeds', {}, { delayMs: 60_000 });
    expect(await apiRun(run.id)).toMatchObject({ state: 'scheduled', attempt: 0 });
    expect(await (await bullJob(run.id))?.isDelayed()).toBe(true);

    const res = await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(200);
    expect(res.body).toMatchObject({ id: run.id, state: 'cancelled', attempt: 0 });
    expect(res.body.finalized_at).not.toBeNull();
    expect(await bullJob(run.id)).toBeFalsy();
    expect((await apiRun(run.id)).state).toBe('cancelled');
    const audit = await t.ctx.db('audit_events').where({ action: 'ops.job_run.cancelled', target_id: String(run.id) });
    expect(audit).toHaveLength(1);
    expect(calls.get(run.id)).toBeUndefined();
  });

  it('a retryable run is cancelled at once and is not attempted again', async () => {
    const run = await retryableHeld();
    const res = await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(200);
    expect(res.body).toMatchObject({ state: 'cancelled', attempt: 1, errors: [errorEntry(1, 'boom 1')] });
    // BullMQ no longer holds the retry: nothing is left to attempt once the queue runs again.
    expect(await bullJob(run.id)).toBeFalsy();
    await t.ctx.jobs.setPaused('default', false);
    expect(calls.get(run.id)).toBe(1);
    expect((await apiRun(run.id)).state).toBe('cancelled');
  });

  it('a running run answers 202, its handler sees the abort, and it ends cancelled', async () => {
    const run = await enqueue('test.gated');
    await waitForGate(run.id);
    const res = await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(202);
    expect(res.body).toMatchObject({ id: run.id, state: 'running' });
    const done = await waitForState(run.id, 'cancelled');
    expect(done).toMatchObject({ attempt: 1, errors: [] });
    expect(done.finalized_at).not.toBeNull();
    expect(aborted.has(run.id)).toBe(true);
    const audit = await t.ctx.db('audit_events').where({ action: 'ops.job_run.cancelled', target_id: String(run.id) });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor_kind: 'operator', data: { kind: 'test.gated', state_before: 'running' } });
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(1);
  });

  it('a running run whose handler ignores the signal still ends cancelled, and no further attempt is made', async () => {
    const run = await enqueue('test.deaf');
    const release = await waitForGate(run.id);
    await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(202);
    // The handler ignores the signal, but the attempt is given up at once: the run is cancelled
    // while the handler still waits, and a second cancel finds it finalized.
    const done = await waitForState(run.id, 'cancelled');
    expect(done).toMatchObject({ attempt: 1, errors: [] });
    const again = await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(422);
    expect(again.body.code).toBe('job_finalized');
    release();
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(1);
    expect((await apiRun(run.id)).state).toBe('cancelled');
  });

  it('a run cancelled while its handler finishes is counted cancelled, not completed, and stays cancelled', async () => {
    const finished = async (state: string) =>
      (await t.ctx.metrics.registry.getSingleMetric('job_runs_finished_total')!.get()).values.find((v) => v.labels.kind === 'test.deaf' && v.labels.state === state)?.value ?? 0;
    const [completedBefore, cancelledBefore] = [await finished('completed'), await finished('cancelled')];
    const run = await enqueue('test.deaf');
    const release = await waitForGate(run.id);
    // Ended in the database by a cancel that reached no worker of this process (no local abort):
    // the handler returns normally afterwards, and the end it writes finds the row cancelled.
    expect(await store.cancelRun(t.ctx.db, run.id, ['running'], new Date())).not.toBeNull();
    release();
    await waitUntilBullForgets(run.id);
    await waitFor('the attempt to be counted', async () => (await finished('cancelled')) === cancelledBefore + 1);
    expect(await finished('completed')).toBe(completedBefore);
    expect((await apiRun(run.id)).state).toBe('cancelled');
    expect(calls.get(run.id)).toBe(1);
  });

  it('a cancel that reaches no worker because the attempt was failing meanwhile still stops further attempts', async () => {
    const run = await retryableHeld();
    // The operator saw it running (the attempt was failing at that moment): 202, but no worker holds it.
    await t.ctx.db('job_runs').where({ id: run.id }).update({ state: 'running' });
    await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(202);
    await t.ctx.db('job_runs').where({ id: run.id }).update({ state: 'retryable' }); // the failure lands
    await t.ctx.jobs.setPaused('default', false); // BullMQ delivers the retry
    const done = await waitForState(run.id, 'cancelled');
    expect(done).toMatchObject({ attempt: 1, errors: [errorEntry(1, 'boom 1')] });
    expect(done.finalized_at).not.toBeNull();
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(1);

    // A retry afterwards is not stopped by that old cancel: it uses its remaining attempts.
    await t.http.post(`/ops/jobs/runs/${run.id}/retry`).set('Authorization', auth).expect(200);
    const discarded = await waitForState(run.id, 'discarded');
    expect(discarded).toMatchObject({ attempt: 3, max_attempts: 3, errors: [errorEntry(1, 'boom 1'), errorEntry(2, 'boom 2'), errorEntry(3, 'boom 3')] });
    expect(calls.get(run.id)).toBe(3);
  });

  describe('from another instance', () => {
    let other: AppContext;
    let otherServer: RequestListener;
    let closeOther: () => Promise<void>;
    beforeAll(async () => {
      ({ ctx: other, close: closeOther } = await startPeer(t, { jobKinds: kinds })); // an API instance: no workers of its own
      otherServer = createApp(other);
    });
    afterAll(() => closeOther());

    it('signals the instance running the run, which ends it cancelled', async () => {
      expect(other.jobs.running).toBe(false);
      const run = await enqueue('test.gated');
      await waitForGate(run.id);
      // Give the other instance's subscriber time to be subscribed.
      await waitFor('the other instance to listen', async () => (await t.ctx.redis.pubsub('NUMSUB', `${t.ctx.config.redisPrefix}bull:jobs:cancel`))[1] === 2);
      const res = await contractClient(otherServer).post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(202);
      expect(res.body.state).toBe('running');
      const done = await waitForState(run.id, 'cancelled');
      expect(done.finalized_at).not.toBeNull();
      expect(aborted.has(run.id)).toBe(true);
      expect(calls.get(run.id)).toBe(1);
    });

    it('cancels a waiting run at once from there too', async () => {
      const run = await enqueue('test.succeeds', {}, { delayMs: 60_000 });
      await contractClient(otherServer).post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(200);
      expect(await bullJob(run.id)).toBeFalsy();
      expect((await apiRun(run.id)).state).toBe('cancelled');
    });
  });

  it('a finalized run answers 422 job_finalized and stays as it is', async () => {
    const run = await enqueue('test.succeeds');
    const done = await waitForState(run.id, 'completed');
    const res = await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(422);
    expect(res.body).toMatchObject({ code: 'job_finalized', errors: [{ location: 'path.id' }] });
    expect(await apiRun(run.id)).toEqual(done);
  });

  it('an unknown run answers 404', async () => {
    await t.http.post('/ops/jobs/runs/999999/cancel').set('Authorization', auth).expect(404);
  });
});

// ----- retry ------------------------------------------------------------------------------------

describe('retry', () => {
  it('a discarded run becomes available with one more attempt, runs again and completes', async () => {
    const run = await enqueue('test.flaky', { failures: 2 });
    const discarded = await waitForState(run.id, 'discarded');
    expect(discarded).toMatchObject({ attempt: 2, max_attempts: 2, errors: [errorEntry(1, 'flaky failure 1'), errorEntry(2, 'flaky failure 2')] });

    const res = await t.http.post(`/ops/jobs/runs/${run.id}/retry`).set('Authorization', auth).expect(200);
    expect(res.body).toMatchObject({ state: 'available', attempt: 2, max_attempts: 3, finalized_at: null, errors: discarded.errors });
    const done = await waitForState(run.id, 'completed');
    expect(done).toMatchObject({ attempt: 3, max_attempts: 3, errors: discarded.errors });
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(3);
    const audit = await t.ctx.db('audit_events').where({ action: 'ops.job_run.retried', target_id: String(run.id) });
    expect(audit).toHaveLength(1);
  });

  it('a completed run runs again', async () => {
    const run = await enqueue('test.succeeds');
    await waitForState(run.id, 'completed');
    // Retried right away: BullMQ may still be finishing the first job.
    const res = await t.http.post(`/ops/jobs/runs/${run.id}/retry`).set('Authorization', auth).expect(200);
    expect(res.body).toMatchObject({ state: 'available', attempt: 1, finalized_at: null });
    const done = await waitForState(run.id, 'completed');
    expect(done.attempt).toBe(2);
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(2);
  });

  it('a run retried while BullMQ is still finishing its last attempt runs again', async () => {
    const run = await enqueue('test.gated');
    const release = await waitForGate(run.id);
    // The row is completed (the worker wrote it) and BullMQ has not yet moved the job out of active.
    await t.ctx.db('job_runs').where({ id: run.id }).update({ state: 'completed', finalized_at: t.clock.now });
    const res = await t.http.post(`/ops/jobs/runs/${run.id}/retry`).set('Authorization', auth).expect(200);
    expect(res.body).toMatchObject({ state: 'available', attempt: 1 });
    release();
    await waitFor('the second attempt', async () => gates.get(run.id) !== release && gates.get(run.id));
    gates.get(run.id)!();
    const done = await waitForState(run.id, 'completed');
    expect(done.attempt).toBe(2);
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(2);
  });

  it('a cancelled run runs again', async () => {
    const run = await enqueue('test.succeeds', {}, { delayMs: 60_000 });
    await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(200);
    await t.http.post(`/ops/jobs/runs/${run.id}/retry`).set('Authorization', auth).expect(200);
    const done = await waitForState(run.id, 'completed');
    expect(done).toMatchObject({ attempt: 1, errors: [] });
    expect(calls.get(run.id)).toBe(1);
  });

  it('a running run answers 422 job_running', async () => {
    const run = await enqueue('test.gated');
    const release = await waitForGate(run.id);
    const res = await t.http.post(`/ops/jobs/runs/${run.id}/retry`).set('Authorization', auth).expect(422);
    expect(res.body).toMatchObject({ code: 'job_running', errors: [{ location: 'path.id' }] });
    expect((await apiRun(run.id)).state).toBe('running');
    release();
    await waitForState(run.id, 'completed');
    expect(calls.get(run.id)).toBe(1);
  });

  it('a scheduled run becomes available now and runs soon', async () => {
    const run = await enqueue('test.succeeds', {}, { delayMs: 60_000 });
    const res = await t.http.post(`/ops/jobs/runs/${run.id}/retry`).set('Authorization', auth).expect(200);
    expect(res.body.state).toBe('available');
    expect(new Date(res.body.scheduled_at).getTime()).toBeLessThan(run.scheduledAt.getTime());
    const done = await waitForState(run.id, 'completed', 5_000);
    expect(done).toMatchObject({ attempt: 1, errors: [] });
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(1);
  });

  it('a retryable run is attempted now, without waiting for its backoff', async () => {
    // Attempt 1 failed and the retry waits a minute in BullMQ (a delayed job, as its backoff makes it).
    const run = await enqueue('test.succeeds', {}, { delayMs: 60_000 });
    const error = { at: t.clock.now.toISOString(), attempt: 1, message: 'boom' };
    await t.ctx.db('job_runs').where({ id: run.id }).update({ state: 'retryable', attempt: 1, attempted_at: t.clock.now, errors: JSON.stringify([error]) });
    expect(await (await bullJob(run.id))?.isDelayed()).toBe(true);
    const res = await t.http.post(`/ops/jobs/runs/${run.id}/retry`).set('Authorization', auth).expect(200);
    expect(res.body).toMatchObject({ state: 'available', attempt: 1 });
    const done = await waitForState(run.id, 'completed');
    expect(done).toMatchObject({ attempt: 2, errors: [error] });
    expect(calls.get(run.id)).toBe(1);
  });

  it('an available run stays as it is', async () => {
    const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.succeeds', {}, system);
    const res = await t.http.post(`/ops/jobs/runs/${run.id}/retry`).set('Authorization', auth).expect(200);
    expect(res.body).toMatchObject({ state: 'available', attempt: 0 });
    await t.ctx.jobs.handOver([run]);
    await waitForState(run.id, 'completed');
    expect(calls.get(run.id)).toBe(1);
  });
});

// ----- BullMQ and the row agree ---------------------------------------------------------------

describe('exactly once', () => {
  it('handing a finished run over again never runs it twice', async () => {
    const run = await enqueue('test.succeeds');
    const done = await waitForState(run.id, 'completed');
    await waitUntilBullForgets(run.id);
    await t.ctx.jobs.handOver([run]);
    await waitUntilBullForgets(run.id); // the re-added job was taken and found nothing to do
    expect(calls.get(run.id)).toBe(1);
    expect(await apiRun(run.id)).toEqual(done);
  });

  it('handing over a run BullMQ holds (running or delayed) is ignored', async () => {
    const gated = await enqueue('test.gated');
    const release = await waitForGate(gated.id);
    await t.ctx.jobs.handOver([gated]);
    const later = await enqueue('test.succeeds', {}, { delayMs: 60_000 });
    await t.ctx.jobs.handOver([later]);
    expect(await (await bullJob(later.id))?.isDelayed()).toBe(true);
    release();
    await waitForState(gated.id, 'completed');
    await waitUntilBullForgets(gated.id);
    expect(calls.get(gated.id)).toBe(1);
    expect(calls.get(later.id)).toBeUndefined();
    await t.http.post(`/ops/jobs/runs/${later.id}/cancel`).set('Authorization', auth).expect(200);
  });

  it('many runs each complete exactly once', async () => {
    const runs = await t.ctx.db.transaction(async (trx) => {
      const out: store.JobRun[] = [];
      for (let i = 0; i < 20; i++) out.push(await t.ctx.jobs.enqueue(trx, 'test.succeeds', { i }, system));
      return out;
    });
    await t.ctx.jobs.handOver(runs);
    await t.ctx.jobs.handOver(runs);
    await waitFor('all runs completed', async () => {
      const rows = await t.ctx.db('job_runs').whereIn('id', runs.map((r) => r.id)).where('state', 'completed');
      return rows.length === runs.length;
    });
    for (const run of runs) await waitUntilBullForgets(run.id);
    for (const run of runs) expect(calls.get(run.id)).toBe(1);
    const rows = await t.ctx.db('job_runs').whereIn('id', runs.map((r) => r.id));
    for (const row of rows) expect(row).toMatchObject({ state: 'completed', attempt: 1, errors: [] });
  });
});

// ----- enqueueMany ------------------------------------------------------------------------------

describe('enqueueMany', () => {
  it('answers each run with the id of its own row, in the order given', async () => {
    const jobs = Array.from({ length: 120 }, (_, i) => ({ kind: 'test.succeeds', payload: { i }, delayMs: i % 3 ? 60_000 : 0 }));
    const runs = await t.ctx.jobs.enqueueMany(t.ctx.db, jobs, system);
    expect(new Set(runs.map((r) => r.id)).size).toBe(jobs.length);
    const rows = await t.ctx.db('job_runs').whereIn('id', runs.map((r) => r.id)).select('id', 'payload', 'state');
    const byId = new Map(rows.map((row) => [Number(row.id), row]));
    runs.forEach((run, i) => {
      expect(run.payload).toEqual({ i });
      expect(byId.get(run.id)).toMatchObject({ payload: { i }, state: i % 3 ? 'scheduled' : 'available' });
    });
    await t.ctx.db('job_runs').whereIn('id', runs.map((r) => r.id)).update({ state: 'cancelled', finalized_at: t.clock.now });
  });
});

// ----- secrets in payloads -----------------------------------------------------------------------

describe('a payload\'s `secret`', () => {
  const secret = { code: '424242' };

  it('reaches the handler and is removed when the run completes', async () => {
    const run = await enqueue('test.succeeds', { keep: 1, secret });
    await waitForState(run.id, 'completed');
    expect(seen.get(run.id)).toEqual([{ keep: 1, secret }]);
    expect(await payloadOf(run.id)).toEqual({ keep: 1, secret_cleared: true });
  });

  it('reaches every attempt and is removed when the run is discarded', async () => {
    const run = await enqueue('test.fails', { keep: 1, secret });
    await waitForState(run.id, 'discarded');
    expect(seen.get(run.id)).toEqual([1, 2, 3].map(() => ({ keep: 1, secret })));
    expect(await payloadOf(run.id)).toEqual({ keep: 1, secret_cleared: true });
  });

  it('stays while the run waits for a retry, and goes when its last attempt fails', async () => {
    const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.succeeds', { secret }, system);
    await startOne(run.id);
    const error = (attempt: number) => ({ at: t.clock.now.toISOString(), attempt, message: 'boom' });
    expect(await store.failAttempt(t.ctx.db, run.id, error(1), new Date(t.clock.now.getTime() + 60_000))).toMatchObject({ state: 'retryable', payload: { secret } });
    expect(await startOne(run.id)).toMatchObject({ attempt: 2, payload: { secret } });
    expect(await store.failAttempt(t.ctx.db, run.id, error(2), null)).toMatchObject({ state: 'discarded', payload: {} });
    expect(await payloadOf(run.id)).toEqual({ secret_cleared: true });
  });

  it('is removed when a stalled last attempt discards the run', async () => {
    const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.succeeds', { keep: 1, secret }, system);
    await t.ctx.db('job_runs').where({ id: run.id }).update({ state: 'running', attempt: 3, attempted_at: t.clock.now });
    expect(await startOne(run.id)).toBeUndefined();
    expect((await apiRun(run.id)).state).toBe('discarded');
    expect(await payloadOf(run.id)).toEqual({ keep: 1, secret_cleared: true });
  });

  it('is removed when a waiting run is cancelled', async () => {
    const run = await enqueue('test.succeeds', { keep: 1, secret }, { delayMs: 60_000 });
    await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(200);
    expect(await payloadOf(run.id)).toEqual({ keep: 1, secret_cleared: true });
  });

  it('is removed when a running run is cancelled', async () => {
    const run = await enqueue('test.gated', { keep: 1, secret });
    await waitForGate(run.id);
    expect(await payloadOf(run.id)).toEqual({ keep: 1, secret }); // still there while it runs
    await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(202);
    await waitForState(run.id, 'cancelled');
    expect(seen.get(run.id)).toEqual([{ keep: 1, secret }]);
    expect(await payloadOf(run.id)).toEqual({ keep: 1, secret_cleared: true });
  });
});

// ----- listing ----------------------------------------------------------------------------------

describe('GET /ops/jobs/runs', () => {
  it('filters by kind, state and queue, newest first, a page at a time', async () => {
    // Rows of their own kinds and queues (never handed over: no worker touches them).
    const now = t.clock.now;
    const row = (kind: string, queue: string): store.NewRun => ({
      kind,
      queue,
      priority: 0,
      maxAttempts: 1,
      timeoutMs: 1_000,
      payload: {},
      scheduledAt: now,
      now,
      actorKind: 'system',
      actorId: null,
      requestId: null,
    });
    const [r0, r1, r2, r3, r4, r5] = (
      await store.insertRuns(t.ctx.db, [row('list.a', 'list-q1'), row('list.b', 'list-q1'), row('list.a', 'list-q2'), row('list.a', 'list-q1'), row('list.b', 'list-q2'), row('list.a', 'list-q2')])
    ).map((r) => r.id) as [number, number, number, number, number, number];
    for (const [id, state] of [[r0, 'completed'], [r2, 'discarded'], [r3, 'running'], [r4, 'completed']] as const) {
      await t.ctx.db('job_runs').where({ id }).update({ state, finalized_at: state === 'running' ? null : now });
    }
    const list = async (query: string) => (await t.http.get(`/ops/jobs/runs?${query}`).set('Authorization', auth).expect(200)).body;
    const ids = (body: { items: { id: number }[] }) => body.items.map((r) => r.id);

    // A kind or a queue alone: waiting, running and finished runs together.
    expect(ids(await list('kind=list.a'))).toEqual([r5, r3, r2, r0]);
    expect(ids(await list('queue=list-q2'))).toEqual([r5, r4, r2]);
    expect(ids(await list('kind=list.b&queue=list-q1'))).toEqual([r1]);
    // With a state.
    expect(ids(await list('kind=list.a&state=available'))).toEqual([r5]);
    expect(ids(await list('kind=list.a&state=completed'))).toEqual([r0]);
    expect(ids(await list('queue=list-q1&state=running'))).toEqual([r3]);
    const discarded = ids(await list('state=discarded&limit=200'));
    expect(discarded).toContain(r2);
    expect(discarded).toEqual([...discarded].sort((a, b) => b - a));
    // Pages.
    const first = await list('kind=list.a&limit=3');
    expect(ids(first)).toEqual([r5, r3, r2]);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await list(`kind=list.a&limit=3&cursor=${first.next_cursor}`);
    expect(ids(second)).toEqual([r0]);
    expect(second.next_cursor).toBeNull();
  });
});
