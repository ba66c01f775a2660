// The job system: BullMQ queues and workers, mirrored in Postgres (job_runs is what /ops shows).
//
// Enqueueing writes the job_runs row inside the caller's transaction (an outbox); after commit the
// row is handed to BullMQ with the run id as the BullMQ job id. A sweeper hands over rows that never
// were (Redis down, process killed in between); BullMQ ignores an add whose job id it already holds,
// and a worker only starts a run whose row is still waiting, so every run executes exactly once.
// The BullMQ job id is `run-<id>` (`bullJobId`): BullMQ 6 refuses integer custom ids.
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import Redis from 'ioredis';
import type { Knex } from 'knex';
import type { Logger } from '../logger';
import type { Actor, RequestMeta } from '../audit/store';
import { nextCronTime, QUEUES, validateConfig, type JobConfig, type JobConfigOverride, type QueueName } from './config';
import { formatDuration, parseDuration } from './duration';
import type { JobKind, JobRegistry } from './kinds';
import * as store from './store';
import { WriteBatcher } from './write-batcher';

export interface JobSystemOptions<Services> {
  db: Knex;
  redisUrl: string;
  /** Prefix of every BullMQ key (tests and deployments sharing one Redis stay apart). */
  prefix: string;
  registry: JobRegistry<Services>;
  services: () => Services;
  logger: Logger;
  now: () => Date;
  /** Jobs this process runs at once per queue (config.jobConcurrency). */
  concurrency: Record<QueueName, number>;
  sweepIntervalMs?: number;
}

/** Exponential backoff between attempts: 1 s, 2 s, 4 s… (BullMQ's own formula, mirrored in job_runs). */
export const BACKOFF_MS = 1_000;
const SCHEDULE_PREFIX = 'schedule:';
const CANCEL_CHANNEL = 'jobs:cancel';
const CONFIG_CHANNEL = 'jobs:config';
/** A cancel request for a running run outlives the broadcast (see `broadcastCancel`). */
const CANCEL_MARK_TTL_S = 24 * 3600;
/** A run due (or past its timeout) this long while BullMQ does not hold its job was lost by BullMQ. */
const OVERDUE_MS = 60_000;
/** How long an operator retry waits in the background for a finishing BullMQ job to leave. */
const REQUEUE_WAIT_MS = 60_000;

export class JobSystem<Services = unknown> {
  readonly queues = new Map<string, Queue>();
  private readonly workers: Worker[] = [];
  private readonly producer: Redis;
  private subscriber: Redis | null = null;
  private sweeper: NodeJS.Timeout | null = null;
  private readonly cancelling = new Set<number>();
  private stopping = false;
  /** Effective config per kind, refreshed from job_definitions by `reloadConfigs`. */
  private configs = new Map<string, JobConfig>();
  /** Attempts starting and completing, written a batch per statement (see WriteBatcher). */
  private readonly attemptWrites: WriteBatcher<'start' | 'complete', store.StartedRun | true>;

  constructor(private readonly opts: JobSystemOptions<Services>) {
    // Producer side fails fast while Redis is down: the outbox keeps the run and the sweeper retries.
    this.producer = new Redis(opts.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true });
    this.producer.on('error', () => undefined);
    this.producer.connect().catch(() => undefined);
    for (const name of QUEUES) {
      const queue = new Queue(name, { connection: this.producer, prefix: opts.prefix });
      queue.on('error', () => undefined); // reported by the callers that fail
      this.queues.set(name, queue);
    }
    for (const kind of opts.registry.all()) this.configs.set(kind.name, kind.defaults);
    this.attemptWrites = new WriteBatcher(async (items) => {
      const ids = (op: 'start' | 'complete') => items.filter((item) => item.input === op).map((item) => item.key);
      const { started, completed } = await store.writeAttempts(opts.db, { start: ids('start'), complete: ids('complete'), at: opts.now() });
      return new Map<number, store.StartedRun | true>([...started, ...[...completed].map((id) => [id, true] as const)]);
    });
  }

  // ----- configuration -------------------------------------------------------------------------

  /** Reads overrides from job_definitions; an override that no longer validates is ignored. */
  async reloadConfigs(): Promise<void> {
    const rows = await this.opts.db('job_definitions').select('name', 'override');
    const overrides = new Map<string, JobConfigOverride | null>(rows.map((r: any) => [r.name, r.override]));
    for (const kind of this.opts.registry.all()) this.configs.set(kind.name, effectiveConfig(kind, overrides.get(kind.name) ?? null).config);
  }

  configOf(kind: string): JobConfig {
    const config = this.configs.get(kind);
    if (!config) throw new Error(`unknown job kind ${kind}`);
    return config;
  }

  // ----- enqueueing ----------------------------------------------------------------------------

  /** Writes the run in the caller's transaction. Call `handOver` with the result after commit. */
  async enqueue(
    trx: Knex | Knex.Transaction,
    kind: string,
    payload: Record<string, unknown>,
    by: { actor: Actor; meta?: RequestMeta },
    opts: { delayMs?: number } = {},
  ): Promise<store.JobRun> {
    const [run] = await this.enqueueMany(trx, [{ kind, payload, delayMs: opts.delayMs }], by);
    return run!;
  }

  /** Writes many runs in one statement in the caller's transaction (bulk producers); `handOver` them after commit. */
  async enqueueMany(
    trx: Knex | Knex.Transaction,
    jobs: { kind: string; payload: Record<string, unknown>; delayMs?: number }[],
    by: { actor: Actor; meta?: RequestMeta },
  ): Promise<store.JobRun[]> {
    const now = this.opts.now();
    return store.insertRuns(
      trx,
      jobs.map(({ kind, payload, delayMs }) => {
        if (!this.opts.registry.get(kind)) throw new Error(`unknown job kind ${kind}`);
        const config = this.configOf(kind);
        return {
          kind,
          queue: config.queue,
          priority: config.priority,
          maxAttempts: config.max_attempts,
          timeoutMs: parseDuration(config.timeout)!,
          payload,
          now,
          scheduledAt: new Date(now.getTime() + (delayMs ?? 0)),
          actorKind: by.actor.kind,
          actorId: by.actor.id,
          requestId: by.meta?.requestId ?? null,
        };
      }),
    );
  }

  /**
   * Hands committed runs to BullMQ, one round trip per queue, and answers the ids it handed over.
   * Never throws: what fails here, the sweeper hands over later. It writes nothing to the database:
   * the worker that starts a run marks it handed over, and the sweeper marks the runs it finds
   * waiting in BullMQ, so a request that enqueues pays one Redis round trip after its commit.
   */
  async handOver(runs: store.JobRun[]): Promise<number[]> {
    const byQueue = new Map<Queue, store.JobRun[]>();
    for (const run of runs) {
      const queue = this.queueOf(run);
      const batch = byQueue.get(queue);
      if (batch) batch.push(run);
      else byQueue.set(queue, [run]);
    }
    const done: number[] = [];
    await Promise.all(
      [...byQueue].map(async ([queue, batch]) => {
        try {
          this.assertProducerReady();
          await queue.addBulk(batch.map((run) => ({ name: run.kind, data: { runId: run.id }, opts: this.jobOptions(run) })));
          for (const run of batch) done.push(run.id);
        } catch (err) {
          this.opts.logger.warn('job hand-over to redis failed; the sweeper will retry', { run_ids: batch.map((r) => r.id), error: errorMessage(err) });
        }
      }),
    );
    return done;
  }

  /**
   * BullMQ waits for a connection that is not ready yet (Redis down since start) instead of failing:
   * producer-side calls fail at once instead, and the outbox keeps the run.
   */
  private assertProducerReady(): void {
    if (this.producer.status !== 'ready') throw new Error(`redis is not reachable (${this.producer.status})`);
  }

  private queueOf(run: store.JobRun): Queue {
    return this.queues.get(run.queue) ?? this.queues.get('default')!;
  }

  private jobOptions(run: store.JobRun) {
    return {
      jobId: bullJobId(run.id),
      priority: run.priority || undefined,
      delay: Math.max(0, run.scheduledAt.getTime() - this.opts.now().getTime()),
      attempts: Math.max(1, run.maxAttempts - run.attempt),
      backoff: { type: 'exponential', delay: BACKOFF_MS },
      removeOnComplete: true,
      removeOnFail: true,
    };
  }

  /**
   * One sweep: marks due runs `available`; then checks the waiting runs older than a few seconds
   * not yet marked handed over (the outbox): those BullMQ holds are marked, the others (Redis was
   * down, the process died after the commit) are handed over and marked. Then the runs BullMQ lost
   * (see `store.findOverdue`) are handed over again. A run whose BullMQ job is active is left
   * alone: the worker running it marks it, and an add now would be ignored (an operator's retry
   * lost). Re-adding is always safe: a worker starts only a run whose row still waits (or records a
   * lost attempt). Returns how many runs were handed over.
   */
  async sweep(): Promise<number> {
    const now = this.opts.now();
    await store.makeDueAvailable(this.opts.db, now);
    const unmarked = await store.findNotHandedOver(this.opts.db, new Date(now.getTime() - 2_000), 500);
    let count = 0;
    if (unmarked.length) {
      const { held, added } = await this.handOverUnlessHeld(unmarked, () => true);
      await store.markHandedOver(this.opts.db, [...held, ...added], now);
      if (added.length) this.opts.logger.info('sweeper handed over runs', { count: added.length });
      count += added.length;
    }
    if (this.producer.status !== 'ready') return count;
    const overdue = await store.findOverdue(this.opts.db, { dueBefore: new Date(now.getTime() - OVERDUE_MS), now, graceMs: OVERDUE_MS, limit: 100 });
    if (overdue.length) {
      const paused = new Set<string>();
      for (const [name, queue] of this.queues) if (await queue.isPaused()) paused.add(name);
      // Lost: BullMQ holds no job for it, or only one that has finished.
      const { added } = await this.handOverUnlessHeld(
        overdue.filter((run) => !paused.has(run.queue)),
        (state) => state === null || state === 'completed' || state === 'failed',
      );
      if (added.length) this.opts.logger.warn('sweeper handed over runs BullMQ had lost', { count: added.length });
      count += added.length;
    }
    return count;
  }

  /**
   * Hands over the runs whose BullMQ job is in a state `wanted` (null: no job) after removing a
   * finished one; `held` are the runs BullMQ already holds waiting, `added` those handed over now.
   * Runs whose job is active, or that Redis could not be asked about, are in neither.
   */
  private async handOverUnlessHeld(runs: store.JobRun[], wanted: (state: string | null) => boolean): Promise<{ held: number[]; added: number[] }> {
    const held: number[] = [];
    const toAdd: store.JobRun[] = [];
    await Promise.all(
      runs.map(async (run) => {
        try {
          const state = await this.jobState(run);
          if (state === 'active' || !wanted(state)) return;
          if (state === 'completed' || state === 'failed') await this.queueOf(run).remove(bullJobId(run.id));
          else if (state !== null) return void held.push(run.id);
        } catch {
          // Redis unreachable: handOver below fails for it too and logs it.
        }
        toAdd.push(run);
      }),
    );
    return { held, added: toAdd.length ? await this.handOver(toAdd) : [] };
  }

  // ----- running -------------------------------------------------------------------------------

  /**
   * Every instance (API or worker): loads the effective configs and listens for cancel signals and
   * config changes made on other instances.
   */
  async init(): Promise<void> {
    await this.reloadConfigs();
    this.subscriber = new Redis(this.opts.redisUrl, { maxRetriesPerRequest: null });
    this.subscriber.on('error', () => undefined);
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel(CANCEL_CHANNEL)) this.cancelLocal(Number(message));
      else void this.onConfigChanged();
    });
    // Not awaited: with Redis down this waits for it, and ioredis re-subscribes after reconnects.
    this.subscriber.subscribe(this.channel(CANCEL_CHANNEL), this.channel(CONFIG_CHANNEL)).catch((err) => {
      this.opts.logger.error('cannot subscribe to job signals', { error: errorMessage(err) });
    });
  }

  /** Workers for every queue, the outbox sweeper and the schedules (API process by default, or `worker` mode). */
  async startWorkers(): Promise<void> {
    for (const name of QUEUES) {
      const worker = new Worker(name, (job, _token, signal) => this.process(job, signal), {
        connection: { url: this.opts.redisUrl, maxRetriesPerRequest: null } as any,
        prefix: this.opts.prefix,
        concurrency: this.concurrencyOf(name),
      });
      let reported = false;
      worker.on('error', (err) => {
        if (!reported) this.opts.logger.error('job worker cannot reach redis; retrying', { queue: name, error: errorMessage(err) });
        reported = true;
      });
      worker.on('ready', () => (reported = false));
      this.workers.push(worker);
    }
    await this.applySchedules().catch((err) => this.opts.logger.error('could not apply job schedules', { error: errorMessage(err) }));
    const interval = this.opts.sweepIntervalMs ?? 5_000;
    this.sweeper = setInterval(() => {
      this.sweep().catch((err) => this.opts.logger.warn('outbox sweep failed', { error: errorMessage(err) }));
    }, interval);
    this.sweeper.unref();
    this.opts.logger.info('job workers started', { queues: QUEUES, kinds: this.opts.registry.all().map((k) => k.name) });
  }

  /** Tell every instance that a definition changed (they reload configs; workers re-apply schedules). */
  async publishConfigChange(): Promise<void> {
    await this.onConfigChanged();
    await this.producer.publish(this.channel(CONFIG_CHANNEL), '1').catch(() => undefined);
  }

  private async onConfigChanged(): Promise<void> {
    try {
      await this.reloadConfigs();
      if (this.running) await this.applySchedules();
    } catch (err) {
      this.opts.logger.error('could not apply a job definition change', { error: errorMessage(err) });
    }
  }

  private channel(name: string): string {
    return `${this.opts.prefix}:${name}`;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.allSettled(this.workers.map((w) => w.close()));
    this.workers.length = 0;
    this.subscriber?.disconnect();
    await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
    this.producer.disconnect();
  }

  get running(): boolean {
    return this.workers.length > 0;
  }

  private async process(job: Job, signal?: AbortSignal): Promise<void> {
    if (job.name.startsWith(SCHEDULE_PREFIX)) return this.fireSchedule(job.name.slice(SCHEDULE_PREFIX.length));
    const { db, logger, now } = this.opts;
    const runId = Number(job.data.runId);
    // A retry or a re-delivery after a stall: an operator may have cancelled the run while no worker
    // held it (between attempts, or on a worker that died). No further attempt then.
    if (((job.attemptsMade ?? 0) > 0 || (job.stalledCounter ?? 0) > 0) && (await this.cancelRequested(runId).catch(() => false))) {
      if (await store.cancelRun(db, runId, ['scheduled', 'available', 'retryable', 'running'], now())) {
        logger.info('job cancelled before its next attempt', { run_id: runId });
      }
      return;
    }
    const run = (await this.attemptWrites.write(runId, 'start')) as store.StartedRun | null;
    if (!run) return; // cancelled, finalized, attempts spent or unknown: nothing to do
    const kind = this.opts.registry.get(run.kind);
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
        kind.handle(run.payload, { services: this.opts.services(), run: { id: run.id, kind: run.kind, attempt: run.attempt }, signal: combined, logger }),
        new Promise((_, reject) => {
          // The signal may have fired already (a cancel that arrived as the attempt started).
          if (combined.aborted) reject(combined.reason);
          else combined.addEventListener('abort', () => reject(combined.reason), { once: true });
        }),
      ]);
      await this.attemptWrites.write(run.id, 'complete');
      logger.info('job completed', { run_id: run.id, kind: run.kind, attempt: run.attempt, duration_ms: Date.now() - started });
    } catch (err) {
      const cancelled =
        this.cancelling.has(run.id) ||
        (signal?.aborted && !timedOut) ||
        // The cancel was requested while this attempt was ending (the signal found no active job).
        (await this.cancelRequested(run.id).catch(() => false));
      if (cancelled) {
        await store.cancelRun(db, run.id, ['running'], now());
        logger.info('job cancelled while running', { run_id: run.id, kind: run.kind });
        throw new UnrecoverableError('cancelled');
      }
      const message = timedOut ? errorMessage(combined.reason) : errorMessage(err);
      const final = run.attempt >= run.maxAttempts || err instanceof UnrecoverableError;
      const at = now();
      const retryAt = final ? null : new Date(at.getTime() + BACKOFF_MS * 2 ** (job.attemptsMade ?? 0));
      await store.failAttempt(db, run.id, { at: at.toISOString(), attempt: run.attempt, message: message.slice(0, 2000) }, retryAt);
      logger.warn(final ? 'job discarded' : 'job attempt failed; will retry', { run_id: run.id, kind: run.kind, attempt: run.attempt, error: message });
      throw final ? new UnrecoverableError(message) : new Error(message);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onCancel);
      this.cancelling.delete(run.id);
    }
  }

  // ----- cancel --------------------------------------------------------------------------------

  /**
   * Signals a running run on whichever instance runs it (BullMQ's cancelJob only reaches its own
   * worker). The request is also kept in Redis for a day: an attempt that ends (fails) as the
   * signal passes, or a worker that died with the run, does not start another attempt.
   */
  async broadcastCancel(runId: number): Promise<void> {
    await this.producer.set(this.cancelKey(runId), '1', 'EX', CANCEL_MARK_TTL_S);
    await this.producer.publish(this.channel(CANCEL_CHANNEL), String(runId));
  }

  private cancelKey(runId: number): string {
    return `${this.opts.prefix}:cancel:${runId}`;
  }

  private async cancelRequested(runId: number): Promise<boolean> {
    return (await this.producer.exists(this.cancelKey(runId))) === 1;
  }

  private cancelLocal(runId: number): void {
    for (const worker of this.workers) {
      if (worker.cancelJob(bullJobId(runId), 'cancelled by an operator')) this.cancelling.add(runId);
    }
  }

  /** Removes a waiting job from BullMQ (its row is already `cancelled`). */
  async removeFromQueue(run: store.JobRun): Promise<void> {
    const queue = this.queues.get(run.queue);
    await queue?.remove(bullJobId(run.id)).catch(() => 0);
  }

  /**
   * After an operator's retry (the row is `available` again): makes a delayed BullMQ job run now,
   * or hands a run BullMQ no longer holds over again. A job still active is the attempt that just
   * ended finishing in BullMQ: the run is handed over once it has left (in the background; the
   * sweeper covers a process that stops meanwhile, as the row is not marked handed over).
   */
  async requeueNow(run: store.JobRun): Promise<void> {
    // A cancel requested earlier must not stop the retried run.
    await this.producer.del(this.cancelKey(run.id)).catch(() => undefined);
    const state = await this.jobState(run).catch(() => undefined);
    if (state === undefined || state === null) {
      await this.handOver([run]); // on failure (Redis down) the outbox keeps it
      return;
    }
    if (state === 'delayed') {
      const job = await this.queueOf(run).getJob(bullJobId(run.id));
      await job?.promote().catch(() => undefined); // it may have become due meanwhile
    } else if (state === 'completed' || state === 'failed') {
      await (await this.queueOf(run).getJob(bullJobId(run.id)))?.remove();
      await this.handOver([run]);
    } else if (state === 'active' && !run.handedOverAt) {
      void this.handOverWhenGone(run);
    }
    // waiting / prioritized: a worker takes it soon.
  }

  private async jobState(run: store.JobRun): Promise<string | null> {
    this.assertProducerReady();
    const job = await this.queueOf(run).getJob(bullJobId(run.id));
    return job ? job.getState() : null;
  }

  private async handOverWhenGone(run: store.JobRun): Promise<void> {
    const deadline = Date.now() + REQUEUE_WAIT_MS;
    try {
      while (Date.now() < deadline && !this.stopping) {
        await new Promise((r) => setTimeout(r, 50).unref());
        const state = await this.jobState(run);
        if (state === 'active') continue;
        if (state === 'completed' || state === 'failed') await (await this.queueOf(run).getJob(bullJobId(run.id)))?.remove();
        if (state !== 'waiting' && state !== 'delayed' && state !== 'prioritized') await this.handOver([run]);
        return;
      }
    } catch (err) {
      this.opts.logger.warn('could not hand a retried run over; the sweeper will', { run_id: run.id, error: errorMessage(err) });
    }
  }

  // ----- schedules -----------------------------------------------------------------------------

  /**
   * Registers each enabled scheduled kind as a BullMQ job scheduler (upsert: idempotent, so
   * instances starting together create one schedule) and removes the others. A scheduler tick
   * only enqueues a run through the outbox, so scheduled runs are ordinary runs.
   */
  async applySchedules(): Promise<void> {
    for (const kind of this.opts.registry.all()) {
      const config = this.configOf(kind.name);
      for (const [name, queue] of this.queues) {
        const wanted = config.enabled && config.schedule && config.queue === name;
        if (wanted) {
          await queue.upsertJobScheduler(
            `${SCHEDULE_PREFIX}${kind.name}`,
            { pattern: config.schedule!, tz: 'UTC' },
            { name: `${SCHEDULE_PREFIX}${kind.name}`, data: {}, opts: { removeOnComplete: true, removeOnFail: true } },
          );
        } else {
          await queue.removeJobScheduler(`${SCHEDULE_PREFIX}${kind.name}`);
        }
      }
    }
  }

  nextRunAt(kind: string): Date | null {
    const config = this.configOf(kind);
    return config.enabled && config.schedule ? nextCronTime(config.schedule, this.opts.now()) : null;
  }

  private async fireSchedule(kind: string): Promise<void> {
    const config = this.configs.get(kind);
    if (!config?.enabled || !config.schedule) return;
    const run = await this.enqueue(this.opts.db, kind, {}, { actor: { kind: 'system', id: null } });
    await this.handOver([run]);
  }

  // ----- queues --------------------------------------------------------------------------------

  /** Pause is global: BullMQ keeps the flag in Redis, and every instance's workers honour it. */
  async setPaused(queue: string, paused: boolean): Promise<void> {
    const q = this.queues.get(queue);
    if (!q) throw new Error(`unknown queue ${queue}`);
    if (paused) await q.pause();
    else await q.resume();
  }

  concurrencyOf(queue: QueueName): number {
    return this.opts.concurrency[queue];
  }
}

/**
 * The BullMQ job id of a run: `run-<id>`. BullMQ 6 refuses integer custom ids (they would clash
 * with its own counter), so the run id is kept with a fixed prefix: still one BullMQ job per run.
 */
export function bullJobId(runId: number): string {
  return `run-${runId}`;
}

/** The configuration a kind runs with: defaults, then the stored override if it still validates. */
export function effectiveConfig(kind: JobKind<any>, override: JobConfigOverride | null) {
  if (!override) return { config: kind.defaults, invalidOverride: false };
  const invalid = validateConfig(override, { needsPayload: kind.needsPayload }).length > 0;
  return invalid ? { config: kind.defaults, invalidOverride: true } : { config: { ...kind.defaults, ...override }, invalidOverride: false };
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}
