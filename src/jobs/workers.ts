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
import { bullJobId } from './bull';
import { isConnectionFailure } from '../platform/dependencies';
import { redisConnectionOptions } from '../platform/redis';
import { inSpan } from '../platform/tracing';
import type { RunOutcome } from '../platform/metrics';

/** What the job system was built with (its timing resolved), and the two parts workers call. */
export type WorkersDeps<App> = Omit<JobSystemOptions<App>, 'timing'> & {
  timing: JobTiming;
  schedules: Pick<Schedules, 'tickOf' | 'fire'>;
  /** Whether an operator asked (on any instance) to cancel the run. */
  cancelRequested: (runId: number) => Promise<boolean>;
};

export class Workers<App> {
  private readonly workers: Worker[] = [];
  /** Runs of this process that an operator's cancel reached. */
  private readonly cancelling = new Set<number>();
  /** Attempts starting and completing, written a batch per statement (see WriteBatcher). */
  private readonly attemptWrites: WriteBatcher<'start' | 'complete', store.StartedRun | true>;

  constructor(private readonly deps: WorkersDeps<App>) {
    this.attemptWrites = new WriteBatcher(async (items) => {
      const ids = (op: 'start' | 'complete') => items.filter((item) => item.input === op).map((item) => item.key);
      const { started, completed } = await store.writeAttempts(deps.db, { start: ids('start'), complete: ids('complete'), at: deps.now() });
      return new Map<number, store.StartedRun | true>([...started, ...[...completed].map((id) => [id, true] as const)]);
    });
  }

  get running(): boolean {
    return this.workers.length > 0;
  }

  start(): void {
    const { logger } = this.deps;
    for (const name of QUEUES) {
      const worker = new Worker(name, (job, _token, signal) => this.process(job, signal), {
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
    for (const worker of this.workers) {
      if (worker.cancelJob(bullJobId(runId), 'cancelled by an operator')) this.cancelling.add(runId);
    }
  }

  /** Counted once the attempt's end is written (src/platform/metrics.ts). */
  private finished(kind: string, state: RunOutcome, started: number): void {
    this.deps.metrics.jobRuns.labels(kind, state).inc();
    this.deps.metrics.jobDuration.labels(kind).observe((Date.now() - started) / 1000);
  }

  private async process(job: Job, signal?: AbortSignal): Promise<void> {
    const tick = this.deps.schedules.tickOf(job.name);
    if (tick !== null) return this.deps.schedules.fire(tick);
    const { db, logger, now } = this.deps;
    const runId = Number(job.data.runId);
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
    const attributes = { 'job.run_id': run.id, 'job.kind': run.kind, 'job.attempt': run.attempt };
    return inSpan(`job ${run.kind}`, { kind: 'consumer', parent: run.traceparent, attributes }, () => this.attempt(job, run, signal));
  }

  /** One attempt of a started run: the handler under a timeout and cancel signal, then the run's end written. */
  private async attempt(job: Job, run: store.StartedRun, signal?: AbortSignal): Promise<void> {
    const { db, logger, now } = this.deps;
    const kind = this.deps.registry.get(run.kind);
    // One signal for the handler: the timeout, or BullMQ's cancel (AbortSignal.any costs more per job).
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort(new Error(`timed out after ${formatDuration(run.timeoutMs)}`));
    }, run.timeoutMs);
    const onCancel = () => abort.abort(signal!.reason);
    if (signal?.aborted) onCancel();
    else signal?.addEventListener('abort', onCancel, { once: true });
    const combined = abort.signal;
    const started = Date.now();
    try {
      if (!kind) throw new UnrecoverableError(`unknown job kind ${run.kind}`);
      await Promise.race([
        kind.handle(run.payload, { app: this.deps.app(), run: { id: run.id, kind: run.kind, attempt: run.attempt }, signal: combined, logger }),
        new Promise((_, reject) => {
          // The signal may have fired already (a cancel that arrived as the attempt started).
          if (combined.aborted) reject(combined.reason);
          else combined.addEventListener('abort', () => reject(combined.reason), { once: true });
        }),
      ]);
      await this.attemptWrites.write(run.id, 'complete');
      this.finished(run.kind, 'completed', started);
      logger.info('job completed', { run_id: run.id, kind: run.kind, attempt: run.attempt, duration_ms: Date.now() - started });
    } catch (err) {
      const cancelled =
        this.cancelling.has(run.id) ||
        (signal?.aborted && !timedOut) ||
        // The cancel was requested while this attempt was ending (the signal found no active job).
        (await this.deps.cancelRequested(run.id).catch(() => false));
      if (cancelled) {
        await store.cancelRun(db, run.id, ['running'], now());
        this.finished(run.kind, 'cancelled', started);
        logger.info('job cancelled while running', { run_id: run.id, kind: run.kind });
        throw new UnrecoverableError('cancelled');
      }
      const message = timedOut ? errorMessage(combined.reason) : errorMessage(err);
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
      signal?.removeEventListener('abort', onCancel);
      this.cancelling.delete(run.id);
    }
  }
}
