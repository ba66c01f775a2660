// Workers: a BullMQ worker per queue, and what happens to one attempt. An attempt starts only if
// its row is still waiting (or records a lost attempt), runs the kind's handler with a signal that
// aborts on timeout and on cancel, and ends the row `completed`, `retryable`, `discarded` or
// `cancelled`. Starts and completions are written in batches (see WriteBatcher).
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { QUEUES } from './config';
import type { JobSystemOptions } from './system-options';
import { formatDuration } from '../config/duration';
import { errorMessage } from './errors';
import type { Schedules } from './schedules';
import * as store from './run-lifecycle-store';
import { backoffDelay, type JobTiming } from './timing';
import { WriteBatcher } from './write-batcher';
import { isConnectionFailure } from '../platform/dependencies';
import { redisConnectionOptions } from '../platform/redis';
import { inSpan, tracingEnabled } from '../platform/tracing';
import type { RunOutcome } from '../platform/metrics';

/** What the job system was built with (its timing resolved), and the two parts workers call. */
export type WorkersDeps<App> = Omit<JobSystemOptions<App>, 'timing'> & {
  timing: JobTiming;
  schedules: Pick<Schedules, 'tickOf' | 'fire'>;
  /** Whether an operator asked (on any instance) to cancel the run. */
  cancelRequested: (runId: number) => Promise<boolean>;
};

/**
 * Batches of start/complete writes in flight at once. With one, a worker's rate was bound by one
 * statement's latency (jobs queued in BullMQ beforehand, concurrency 200: ~7,000 jobs/s at ~95
 * writes per ~4 ms statement, the process mostly idle); two overlap the round trips (~11,700 jobs/s,
 * as bare BullMQ's workers), three gained nothing more. The second goes only when a backlog waits
 * (see WriteBatcher.pump): sent as soon as one could, it split the batches of a trickle in two.
 */
const WRITES_IN_FLIGHT = 2;

/**
 * A run this process holds, from its delivery to the end of its attempt: what an operator's cancel
 * (cancelLocal) and the attempt's timeout abort. The handler's AbortSignal is made only when the
 * handler reads it (most never do; an AbortController per attempt cost a few µs), already aborted
 * if the attempt was; an abort also ends the wait for a handler that ignores its signal.
 */
class Held {
  /** An operator's cancel reached it (as opposed to its timeout). */
  cancelled = false;
  aborted = false;
  reason: unknown = undefined;
  private controller: AbortController | null = null;
  private onAbort: ((reason: unknown) => void) | null = null;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
    this.onAbort?.(reason);
  }

  /** Settles with `work`, or rejects with the abort's reason as soon as it is aborted (at once if it was). */
  race(work: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.aborted) return reject(this.reason);
      this.onAbort = reject;
      work().then(resolve, reject);
    });
  }
}

export class Workers<App> {
  private readonly workers: Worker[] = [];
  /** Runs this process's workers hold (see Held), by run id. */
  private readonly holding = new Map<number, Held>();
  /** The metrics' children per kind and outcome (prom-client's labels() validates and binds on every call). */
  private readonly outcomeMetrics = new Map<string, { runs: { inc(): void }; duration: { observe(seconds: number): void } }>();
  /** Attempts starting and completing, written a batch per statement (see WriteBatcher). */
  private readonly attemptWrites: WriteBatcher<'start' | 'complete', store.StartedRun | true>;

  constructor(private readonly deps: WorkersDeps<App>) {
    this.attemptWrites = new WriteBatcher(async (items) => {
      const ids = (op: 'start' | 'complete') => items.filter((item) => item.input === op).map((item) => item.key);
      const { started, completed } = await store.writeAttempts(deps.db, { start: ids('start'), complete: ids('complete'), at: deps.now() });
      const answers = new Map<number, store.StartedRun | true>(started);
      for (const id of completed) answers.set(id, true);
      return answers;
    }, 500, WRITES_IN_FLIGHT);
  }

  get running(): boolean {
    return this.workers.length > 0;
  }

  start(): void {
    const { logger } = this.deps;
    for (const name of QUEUES) {
      // No signal parameter: BullMQ then makes no AbortController per job; cancel and timeout abort
      // through `holding` (see Held).
      const worker = new Worker(name, (job) => this.process(job), {
        connection: { ...redisConnectionOptions(this.deps.redis), maxRetriesPerRequest: null },
        prefix: this.deps.prefix,
        concurrency: this.deps.concurrency[name],
      });
      // This worker's stalled-job check moved a run back to waiting: it will be delivered again.
      worker.on('stalled', () => this.deps.metrics.jobStalled.labels(name).inc());
      // Its own connection: an outage is reported to the monitor (logged once), BullMQ reconnects.
      worker.on('error', (err) => {
        if (isConnectionFailure(err)) this.deps.dependencies.failed('redis', err);
        else logger.error('job worker error', { queue: name, error: errorMessage(err) });
      });
      this.workers.push(worker);
    }
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.workers.map((w) => w.close()));
    this.workers.length = 0;
  }

  /** An operator's cancel reached this instance: abort the run if one of its workers holds it. */
  cancelLocal(runId: number): void {
    const held = this.holding.get(runId);
    if (!held) return;
    held.cancelled = true;
    held.abort('cancelled by an operator');
  }

  /** Counted once the attempt's end is written (src/platform/metrics.ts). */
  private finished(kind: string, state: RunOutcome, started: number): void {
    const key = `${state}\u0000${kind}`;
    let m = this.outcomeMetrics.get(key);
    if (!m) {
      m = { runs: this.deps.metrics.jobRuns.labels(kind, state), duration: this.deps.metrics.jobDuration.labels(kind) };
      this.outcomeMetrics.set(key, m);
    }
    m.runs.inc();
    m.duration.observe((Date.now() - started) / 1000);
  }

  private async process(job: Job): Promise<void> {
    const tick = this.deps.schedules.tickOf(job.name);
    if (tick !== null) return this.deps.schedules.fire(tick);
    const runId = Number(job.data.runId);
    // Held from now on: a cancel that arrives while the start is being written aborts the attempt
    // as it starts. (A second delivery of the run to this process, a stall's, holds it anew.)
    const held = new Held();
    this.holding.set(runId, held);
    try {
      await this.deliver(job, runId, held);
    } finally {
      if (this.holding.get(runId) === held) this.holding.delete(runId);
    }
  }

  /** A delivered run: started if its row still waits (exactly once), then its attempt. */
  private async deliver(job: Job, runId: number, held: Held): Promise<void> {
    const { db, logger, now } = this.deps;
    // A retry or a re-delivery after a stall: an operator may have cancelled the run while no worker
    // held it (between attempts, or on a worker that died). No further attempt then.
    if (((job.attemptsMade ?? 0) > 0 || (job.stalledCounter ?? 0) > 0) && (await this.deps.cancelRequested(runId).catch(() => false))) {
      if (await store.cancelRun(db, runId, ['scheduled', 'available', 'retryable', 'running'], now())) {
        logger.info('job cancelled before its next attempt', { run_id: runId });
      }
      return;
    }
    const run = (await this.attemptWrites.write(runId, 'start')) as store.StartedRun | null;
    if (!run) return; // cancelled, finalized, attempts spent or unknown: nothing to do
    // A span per attempt whose parent is the enqueuing request's: one trace shows the request, the
    // run and what the handler did (mail, queries). With tracing off, just the attempt.
    if (!tracingEnabled) return this.attempt(job, run, held);
    const attributes = { 'job.run_id': run.id, 'job.kind': run.kind, 'job.attempt': run.attempt };
    return inSpan(`job ${run.kind}`, { kind: 'consumer', parent: run.traceparent, attributes }, () => this.attempt(job, run, held));
  }

  /** One attempt of a started run: the handler under a timeout and cancel signal, then the run's end written. */
  private async attempt(job: Job, run: store.StartedRun, held: Held): Promise<void> {
    const { db, logger, now } = this.deps;
    const kind = this.deps.registry.get(run.kind);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      held.abort(new Error(`timed out after ${formatDuration(run.timeoutMs)}`));
    }, run.timeoutMs);
    const started = Date.now();
    try {
      if (!kind) throw new UnrecoverableError(`unknown job kind ${run.kind}`);
      const info = { id: run.id, kind: run.kind, attempt: run.attempt };
      const app = this.deps.app();
      // The signal is read through a getter: made only if the handler asks for it (see Held).
      await held.race(() =>
        kind.handle(run.payload, {
          app,
          run: info,
          get signal() {
            return held.signal;
          },
          logger,
        }),
      );
      if (await this.attemptWrites.write(run.id, 'complete')) {
        this.finished(run.kind, 'completed', started);
        logger.info('job completed', { run_id: run.id, kind: run.kind, attempt: run.attempt, duration_ms: Date.now() - started });
      } else {
        // The row was no longer running: a cancel ended it while the handler was finishing (one
        // that reached no worker of this process). It stays cancelled, and is counted so.
        this.finished(run.kind, 'cancelled', started);
        logger.info('job cancelled while running', { run_id: run.id, kind: run.kind, handler_finished: true });
      }
    } catch (err) {
      const cancelled =
        held.cancelled ||
        // The cancel was requested while this attempt was ending (the signal found no active job).
        (await this.deps.cancelRequested(run.id).catch(() => false));
      if (cancelled) {
        await store.cancelRun(db, run.id, ['running'], now());
        this.finished(run.kind, 'cancelled', started);
        logger.info('job cancelled while running', { run_id: run.id, kind: run.kind });
        throw new UnrecoverableError('cancelled');
      }
      const message = timedOut ? errorMessage(held.reason) : errorMessage(err);
      const final = run.attempt >= run.maxAttempts || err instanceof UnrecoverableError;
      const at = now();
      // BullMQ retries after the same delay (its exponential backoff over `timing.backoffMs`).
      const retryAt = final ? null : new Date(at.getTime() + backoffDelay(this.deps.timing, (job.attemptsMade ?? 0) + 1));
      await store.failAttempt(db, run.id, { at: at.toISOString(), attempt: run.attempt, message: message.slice(0, 2000) }, retryAt);
      this.finished(run.kind, final ? 'discarded' : 'retryable', started);
      logger.warn(final ? 'job discarded' : 'job attempt failed; will retry', { run_id: run.id, kind: run.kind, attempt: run.attempt, error: message });
      throw final ? new UnrecoverableError(message) : new Error(message);
    } finally {
      clearTimeout(timer);
    }
  }
}
