// The job system: BullMQ queues and workers, mirrored in Postgres (job_runs is what /ops shows).
// This facade wires its parts, each in its own file:
// - outbox-relay.ts: runs written in the caller's transaction, handed over after commit, the sweeper;
// - workers.ts: BullMQ workers and what happens to one attempt;
// - signals.ts: cancel and config-change signals between instances (Redis pub/sub);
// - schedules.ts: BullMQ job schedulers from the effective configs;
// - bull.ts: the producer connection and queues (BullMQ job id `run-<id>`).
import type { Db } from '../platform/database';
import { reportRedisConnection } from '../platform/dependencies';
import type { Actor, RequestMeta } from '../audit/service';
import { BullQueues } from './bull';
import { effectiveConfig, type JobConfig, type QueueName } from './config';
import { readOverrides } from './definitions-store';
import { errorMessage } from './errors';
import type { JobKind } from './kinds';
import { OutboxRelay, type NewJob } from './outbox-relay';
import { Schedules } from './schedules';
import { Signals } from './signals';
import type * as store from './run-lifecycle-store';
import { outboxBacklog } from './run-lifecycle-store';
import type { JobSystemOptions } from './system-options';
import { DEFAULT_TIMING, type JobTiming } from './timing';
import { Workers } from './workers';

export { bullJobId } from './bull';

type By = { actor: Actor; meta?: RequestMeta };

export class JobSystem<App = unknown> {
  readonly timing: JobTiming;
  private readonly bull: BullQueues;
  private readonly relay: OutboxRelay;
  private readonly workers: Workers<App>;
  private readonly signals: Signals;
  private readonly schedules: Schedules;
  /** Effective config per kind, refreshed from job_definitions by `reloadConfigs`. */
  private readonly configs = new Map<string, JobConfig>();
  /** `init` has run: the database is ready, so Redis can be given its state from it. */
  private initialised = false;

  constructor(private readonly opts: JobSystemOptions<App>) {
    const { db, redis, prefix, registry, logger, now } = opts;
    const timing = (this.timing = { ...DEFAULT_TIMING, ...opts.timing });
    for (const kind of registry.all()) this.configs.set(kind.name, kind.defaults);
    const configOf = (kind: string) => this.configOf(kind);
    this.bull = new BullQueues(redis, prefix);
    this.watchProducer();
    this.relay = new OutboxRelay({ db, bull: this.bull, registry, configOf, logger, now, timing, dependencies: opts.dependencies });
    this.schedules = new Schedules({
      bull: this.bull,
      registry,
      configOf,
      now,
      enqueueTick: async (kind) => {
        await this.handOver(await this.enqueueMany(db, [{ kind, payload: {} }], { actor: { kind: 'system', id: null } }));
      },
    });
    this.signals = new Signals({
      redis,
      prefix,
      producer: this.bull.producer,
      logger,
      timing,
      onCancel: (runId) => this.workers.cancelLocal(runId),
      onConfigChanged: () => this.onConfigChanged(),
    });
    this.workers = new Workers({
      ...opts,
      timing,
      schedules: this.schedules,
      cancelRequested: (runId) => this.signals.cancelRequested(runId),
    });
  }

  /** BullMQ's queue per name. */
  get queues() {
    return this.bull.queues;
  }

  /**
   * The producer connection reports outages to the monitor. Once `init` has run (the database is
   * ready), every time it connects the pause flags and, where workers run, the schedulers are
   * re-applied from PostgreSQL: Redis may have come back without its data, or been down at start.
   */
  private watchProducer(): void {
    reportRedisConnection(this.bull.producer, this.opts.dependencies);
    this.bull.producer.on('ready', () => {
      if (this.initialised) void this.reapply();
    });
  }

  /** Pause flags (from PostgreSQL, by the composition's callback) and schedules, into Redis again. Never throws. */
  private async reapply(): Promise<void> {
    try {
      await this.opts.reapplyQueueStates?.();
      if (this.running) await this.schedules.apply();
      this.opts.logger.info('queue pauses and job schedules re-applied to redis', { schedules: this.running });
    } catch (err) {
      this.opts.logger.error('could not re-apply queue pauses and schedules to redis; done again when it reconnects', { error: errorMessage(err) });
    }
  }

  // ----- kinds and configuration -----------------------------------------------------------------

  /** Every kind defined in code (the catalogue and what the composition root added), sorted by name. */
  kinds(): JobKind<App>[] {
    return this.opts.registry.all();
  }

  kind(name: string): JobKind<App> | undefined {
    return this.opts.registry.get(name);
  }

  /** Reads overrides from job_definitions; an override that no longer validates is ignored. */
  async reloadConfigs(): Promise<void> {
    const overrides = await readOverrides(this.opts.db);
    for (const kind of this.opts.registry.all()) this.configs.set(kind.name, effectiveConfig(kind, overrides.get(kind.name) ?? null).config);
  }

  configOf(kind: string): JobConfig {
    const config = this.configs.get(kind);
    if (!config) throw new Error(`unknown job kind ${kind}`);
    return config;
  }

  /** Tell every instance that a definition changed (they reload configs; workers re-apply schedules). */
  async publishConfigChange(): Promise<void> {
    await this.onConfigChanged();
    await this.signals.publishConfigChange();
  }

  private async onConfigChanged(): Promise<void> {
    try {
      await this.reloadConfigs();
      if (this.running) await this.schedules.apply();
    } catch (err) {
      this.opts.logger.error('could not apply a job definition change', { error: errorMessage(err) });
    }
  }

  // ----- enqueueing (see outbox-relay.ts) --------------------------------------------------------

  /** Writes the run in the caller's transaction. Call `handOver` with the result after commit. */
  async enqueue(db: Db, kind: string, payload: Record<string, unknown>, by: By, opts: { delayMs?: number } = {}): Promise<store.JobRun> {
    const [run] = await this.relay.write(db, [{ kind, payload, delayMs: opts.delayMs }], by);
    return run!;
  }

  /** Writes many runs in one statement in the caller's transaction (bulk producers); `handOver` them after commit. */
  enqueueMany(db: Db, jobs: NewJob[], by: By): Promise<store.JobRun[]> {
    return this.relay.write(db, jobs, by);
  }

  /** Hands committed runs to BullMQ; never throws (the sweeper retries). Answers the ids handed over. */
  handOver(runs: store.JobRun[]): Promise<number[]> {
    return this.relay.handOver(runs);
  }

  /** One outbox sweep (also run every `timing.sweepIntervalMs` by worker processes). */
  sweep(): Promise<number> {
    return this.relay.sweep();
  }

  // ----- running ---------------------------------------------------------------------------------

  /** Every instance (API or worker): loads the effective configs and listens for other instances' signals. */
  async init(): Promise<void> {
    await this.reloadConfigs();
    this.signals.subscribe();
    this.initialised = true;
    if (this.bull.ready) await this.reapply();
  }

  /** Workers for every queue, the outbox sweeper and the schedules (API process by default, or `worker` mode). */
  async startWorkers(): Promise<void> {
    this.workers.start();
    await this.applySchedules().catch((err) => this.opts.logger.error('could not apply job schedules', { error: errorMessage(err) }));
    this.relay.startSweeper();
    this.opts.logger.info('job workers started', { queues: [...this.bull.queues.keys()], kinds: this.kinds().map((k) => k.name) });
  }

  get running(): boolean {
    return this.workers.running;
  }

  async stop(): Promise<void> {
    this.relay.stop();
    await this.workers.stop();
    this.signals.stop();
    await this.bull.close();
  }

  // ----- operator actions ------------------------------------------------------------------------

  /** Signals a running run on whichever instance runs it (see Signals.broadcastCancel). */
  broadcastCancel(runId: number): Promise<void> {
    return this.signals.broadcastCancel(runId);
  }

  /** Removes a waiting job from BullMQ (its row is already `cancelled`). */
  removeFromQueue(run: store.JobRun): Promise<void> {
    return this.relay.removeFromQueue(run);
  }

  /** After an operator's retry: the run goes to BullMQ now, and an earlier cancel request no longer stops it. */
  async requeueNow(run: store.JobRun): Promise<void> {
    await this.signals.clearCancel(run.id);
    await this.relay.requeueNow(run);
  }

  /** Pause is global: BullMQ keeps the flag in Redis, and every instance's workers honour it. */
  async setPaused(queue: string, paused: boolean): Promise<void> {
    const q = this.bull.queues.get(queue);
    if (!q) throw new Error(`unknown queue ${queue}`);
    if (paused) await q.pause();
    else await q.resume();
  }

  concurrencyOf(queue: QueueName): number {
    return this.opts.concurrency[queue];
  }

  // ----- readings for metrics (read at scrape time, src/platform/metrics.ts) ---------------------

  /** Jobs in each BullMQ queue by state; one round trip per queue. Waiting includes prioritized jobs (BullMQ keeps them apart). */
  async queueDepths(): Promise<{ queue: string; waiting: number; active: number; delayed: number }[]> {
    this.bull.assertReady();
    return Promise.all(
      [...this.bull.queues].map(async ([queue, q]) => {
        const c = await q.getJobCounts('waiting', 'prioritized', 'active', 'delayed');
        return { queue, waiting: (c.waiting ?? 0) + (c.prioritized ?? 0), active: c.active ?? 0, delayed: c.delayed ?? 0 };
      }),
    );
  }

  /** The outbox's backlog and the age of its oldest due run (see run-lifecycle-store.ts). */
  outbox(): Promise<{ backlog: number; oldestAgeSeconds: number }> {
    return outboxBacklog(this.opts.db, this.opts.now());
  }

  // ----- schedules (see schedules.ts) ------------------------------------------------------------

  applySchedules(): Promise<void> {
    return this.schedules.apply();
  }

  nextRunAt(kind: string): Date | null {
    return this.schedules.nextRunAt(kind);
  }
}
