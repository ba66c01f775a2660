// The outbox and its relay to BullMQ. Enqueueing writes job_runs rows inside the caller's
// transaction; after commit they are handed to BullMQ with the run id as the BullMQ job id. A
// sweeper hands over rows that never were (Redis down, process killed in between); BullMQ ignores
// an add whose job id it already holds, and a worker only starts a run whose row is still waiting,
// so every run executes exactly once.
import type { JobsOptions } from 'bullmq';
import type { Db } from '../platform/database';
import type { Logger } from '../logger';
import type { Actor, RequestMeta } from '../audit/service';
import type { JobConfig } from './config';
import { bullJobId, runJobData, type BullQueues } from './bull';
import { parseDuration } from '../config/duration';
import { errorMessage } from './errors';
import type { JobRegistry } from './kinds';
import * as store from './run-lifecycle-store';
import type { JobTiming } from './timing';
import type { DependencyReporter } from '../platform/dependencies';
import { currentTraceparent } from '../platform/tracing';

export interface OutboxRelayDeps {
  db: Db;
  bull: BullQueues;
  registry: JobRegistry<unknown>;
  configOf: (kind: string) => JobConfig;
  logger: Logger;
  now: () => Date;
  timing: JobTiming;
  dependencies: DependencyReporter;
}

export interface NewJob {
  kind: string;
  payload: Record<string, unknown>;
  delayMs?: number;
}

export class OutboxRelay {
  private sweeper: NodeJS.Timeout | null = null;
  private stopping = false;

  constructor(private readonly deps: OutboxRelayDeps) {}

  /** Writes runs in one statement on `db` (the caller's transaction); hand them over after commit. */
  async write(db: Db, jobs: NewJob[], by: { actor: Actor; meta?: RequestMeta }): Promise<store.JobRun[]> {
    const now = this.deps.now();
    // The enqueuing request's (or run's) span, which the runs' attempts continue; null with tracing off.
    const traceparent = currentTraceparent();
    // What a kind's runs share, looked up once per kind in the batch (a bulk producer's runs are of one kind).
    const kinds = new Map<string, { queue: string; priority: number; maxAttempts: number; timeoutMs: number }>();
    const kindOf = (kind: string) => {
      let k = kinds.get(kind);
      if (!k) {
        if (!this.deps.registry.get(kind)) throw new Error(`unknown job kind ${kind}`);
        const config = this.deps.configOf(kind);
        k = { queue: config.queue, priority: config.priority, maxAttempts: config.max_attempts, timeoutMs: parseDuration(config.timeout)! };
        kinds.set(kind, k);
      }
      return k;
    };
    return store.insertRuns(
      db,
      jobs.map(({ kind, payload, delayMs }) => {
        const k = kindOf(kind);
        return {
          kind,
          queue: k.queue,
          priority: k.priority,
          maxAttempts: k.maxAttempts,
          timeoutMs: k.timeoutMs,
          payload,
          now,
          scheduledAt: delayMs ? new Date(now.getTime() + delayMs) : now,
          actorKind: by.actor.kind,
          actorId: by.actor.id,
          requestId: by.meta?.requestId ?? null,
          traceparent,
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
    const { bull, logger } = this.deps;
    const byQueue = new Map<ReturnType<BullQueues['of']>, store.JobRun[]>();
    for (const run of runs) {
      const queue = bull.of(run);
      const batch = byQueue.get(queue);
      if (batch) batch.push(run);
      else byQueue.set(queue, [run]);
    }
    const done: number[] = [];
    await Promise.all(
      [...byQueue].map(async ([queue, batch]) => {
        try {
          bull.assertReady();
          await queue.addBulk(batch.map((run) => ({ name: run.kind, data: runJobData(run), opts: this.jobOptions(run) })));
          for (const run of batch) done.push(run.id);
        } catch (err) {
          // The outage is logged once by the monitor; the runs wait in the outbox for the sweeper.
          this.deps.dependencies.failed('redis', err);
          logger.debug('job hand-over to redis failed; the sweeper will retry', { run_ids: batch.map((r) => r.id), error: errorMessage(err) });
        }
      }),
    );
    return done;
  }

  /**
   * Only the options a run needs: BullMQ encodes (msgpack) and stores every key it is given, so a
   * run of one attempt, due now, at no priority is added with the options of a plain job (its
   * defaults: one attempt, no delay, no priority).
   */
  private jobOptions(run: store.JobRun): JobsOptions {
    const opts: JobsOptions = { jobId: bullJobId(run.id), removeOnComplete: true, removeOnFail: true };
    if (run.priority) opts.priority = run.priority;
    const delay = run.scheduledAt.getTime() - this.deps.now().getTime();
    if (delay > 0) opts.delay = delay;
    const attempts = run.maxAttempts - run.attempt;
    if (attempts > 1) {
      opts.attempts = attempts;
      opts.backoff = { type: 'exponential', delay: this.deps.timing.backoffMs };
    }
    return opts;
  }

  // ----- the sweeper -----------------------------------------------------------------------------

  startSweeper(): void {
    this.sweeper = setInterval(() => {
      this.sweep().catch((err) => this.deps.logger.warn('outbox sweep failed', { error: errorMessage(err) }));
    }, this.deps.timing.sweepIntervalMs);
    this.sweeper.unref();
  }

  stop(): void {
    this.stopping = true;
    if (this.sweeper) clearInterval(this.sweeper);
  }

  /**
   * One sweep: marks due runs `available`; then checks the waiting runs older than the hand-over
   * grace not yet marked handed over (the outbox): those BullMQ holds are marked, the others (Redis
   * was down, the process died after the commit) are handed over and marked. A run an operator
   * retried is in the outbox too: a job still delayed for its old schedule is made to start now.
   * Then the runs BullMQ
   * lost (see `store.findOverdue`) are handed over again. A run whose BullMQ job is active is left
   * alone: the worker running it marks it, and an add now would be ignored (an operator's retry
   * lost). Re-adding is always safe: a worker starts only a run whose row still waits (or records a
   * lost attempt). Returns how many runs were handed over.
   */
  async sweep(): Promise<number> {
    const { db, bull, logger, timing } = this.deps;
    const now = this.deps.now();
    await store.makeDueAvailable(db, now);
    const unmarked = await store.findNotHandedOver(db, new Date(now.getTime() - timing.handOverGraceMs), 500);
    let count = 0;
    if (unmarked.length) {
      const { held, added } = await this.handOverUnlessHeld(unmarked, () => true);
      await store.markHandedOver(db, [...held, ...added], now);
      if (added.length) logger.info('sweeper handed over runs', { count: added.length });
      count += added.length;
    }
    if (!bull.ready) return count;
    const overdue = await store.findOverdue(db, { dueBefore: new Date(now.getTime() - timing.overdueMs), now, graceMs: timing.overdueMs, limit: 100 });
    if (overdue.length) {
      const paused = new Set<string>();
      for (const [name, queue] of bull.queues) if (await queue.isPaused()) paused.add(name);
      // Lost: BullMQ holds no job for it, or only one that has finished.
      const { added } = await this.handOverUnlessHeld(
        overdue.filter((run) => !paused.has(run.queue)),
        (state) => state === null || state === 'completed' || state === 'failed',
      );
      if (added.length) logger.warn('sweeper handed over runs BullMQ had lost', { count: added.length });
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
          const state = await this.deps.bull.jobState(run);
          if (state === 'active' || !wanted(state)) return;
          if (state === 'completed' || state === 'failed') await this.deps.bull.removeJob(run);
          else if (state !== null) {
            if (state === 'delayed') await this.deps.bull.promoteIfRetried(run);
            return void held.push(run.id);
          }
        } catch {
          // Redis unreachable: handOver below fails for it too and logs it.
        }
        toAdd.push(run);
      }),
    );
    return { held, added: toAdd.length ? await this.handOver(toAdd) : [] };
  }

  // ----- operator actions ----------------------------------------------------------------------

  /**
   * Removes a waiting job from BullMQ (its row is already `cancelled`). Best effort: a worker that
   * takes a job left behind finds the run cancelled. Not tried while Redis is not ready, as BullMQ
   * would wait for a connection never made yet instead of failing.
   */
  async removeFromQueue(run: store.JobRun): Promise<void> {
    const queue = this.deps.bull.queues.get(run.queue);
    try {
      this.deps.bull.assertReady();
      await queue?.remove(bullJobId(run.id));
    } catch {
      /* best effort, see above */
    }
  }

  /**
   * After an operator's retry (the row is `available` again, and back in the outbox, so whatever
   * fails here the sweeper does once Redis answers): makes a delayed BullMQ job run now, or hands a
   * run BullMQ no longer holds over again. A job still active is the attempt that just ended
   * finishing in BullMQ: the run is requeued once it has left (in the background). Never throws:
   * the retry is recorded, so its answer does not depend on Redis.
   */
  async requeueNow(run: store.JobRun): Promise<void> {
    try {
      const state = await this.deps.bull.jobState(run).catch(() => undefined);
      if (state === 'active') void this.requeueWhenGone(run);
      else await this.requeue(run, state);
    } catch (err) {
      this.deps.logger.warn('could not hand a retried run over; the sweeper will', { run_id: run.id, error: errorMessage(err) });
    }
  }

  /** `state`: of the run's BullMQ job, null when it holds none, undefined when Redis did not answer. */
  private async requeue(run: store.JobRun, state: string | null | undefined): Promise<void> {
    const { bull } = this.deps;
    if (state === 'delayed') {
      const job = await bull.of(run).getJob(bullJobId(run.id));
      await job?.promote().catch(() => undefined); // it may have become due meanwhile
    } else if (state === 'completed' || state === 'failed') {
      await bull.removeJob(run);
      await this.handOver([run]);
    } else if (state === undefined || state === null) {
      await this.handOver([run]);
    }
    // waiting / prioritized: a worker takes it soon.
  }

  private async requeueWhenGone(run: store.JobRun): Promise<void> {
    const { bull, timing } = this.deps;
    const deadline = Date.now() + timing.requeueWaitMs;
    try {
      while (Date.now() < deadline && !this.stopping) {
        await new Promise((r) => setTimeout(r, timing.requeuePollMs).unref());
        const state = await bull.jobState(run);
        if (state === 'active') continue;
        await this.requeue(run, state);
        return;
      }
    } catch (err) {
      this.deps.logger.warn('could not hand a retried run over; the sweeper will', { run_id: run.id, error: errorMessage(err) });
    }
  }
}
