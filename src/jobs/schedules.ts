// Schedules: each enabled scheduled kind is a BullMQ job scheduler, upserted from the effective
// config at every start and after every change (idempotent, so instances starting together create
// one). A tick only enqueues an ordinary run through the outbox.
import type { BullQueues } from './bull';
import { nextCronTime, type JobConfig } from './config';
import type { JobRegistry } from './kinds';

const SCHEDULE_PREFIX = 'schedule:';

export interface SchedulesDeps {
  bull: BullQueues;
  registry: JobRegistry<unknown>;
  configOf: (kind: string) => JobConfig;
  now: () => Date;
  /** Enqueues and hands over one run of `kind` (a tick). */
  enqueueTick: (kind: string) => Promise<void>;
}

export class Schedules {
  constructor(private readonly deps: SchedulesDeps) {}

  /** Registers every enabled scheduled kind on its queue and removes the other schedulers. */
  async apply(): Promise<void> {
    for (const kind of this.deps.registry.all()) {
      const config = this.deps.configOf(kind.name);
      const name = `${SCHEDULE_PREFIX}${kind.name}`;
      for (const [queueName, queue] of this.deps.bull.queues) {
        const wanted = config.enabled && config.schedule && config.queue === queueName;
        if (wanted) {
          await queue.upsertJobScheduler(name, { pattern: config.schedule!, tz: 'UTC' }, { name, data: {}, opts: { removeOnComplete: true, removeOnFail: true } });
        } else {
          await queue.removeJobScheduler(name);
        }
      }
    }
  }

  nextRunAt(kind: string): Date | null {
    const config = this.deps.configOf(kind);
    return config.enabled && config.schedule ? nextCronTime(config.schedule, this.deps.now()) : null;
  }

  /** The kind a BullMQ job ticks for, or null when the job is a run. */
  tickOf(jobName: string): string | null {
    return jobName.startsWith(SCHEDULE_PREFIX) ? jobName.slice(SCHEDULE_PREFIX.length) : null;
  }

  /** A tick: one run, unless the kind is gone, disabled or no longer scheduled meanwhile. */
  async fire(kind: string): Promise<void> {
    if (!this.deps.registry.get(kind)) return;
    const config = this.deps.configOf(kind);
    if (!config.enabled || !config.schedule) return;
    await this.deps.enqueueTick(kind);
  }
}
