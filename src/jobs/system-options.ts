// What the job system is built with. Its own file because workers.ts takes these options too:
// declared in system.ts (which builds the workers), they made the two files import each other.
import type { Knex } from 'knex';
import type { Logger } from '../logger';
import type { DependencyReporter } from '../platform/dependencies';
import type { Metrics } from '../platform/metrics';
import type { RedisConfig } from '../platform/redis';
import type { QueueName } from './config';
import type { JobRegistry } from './kinds';
import type { JobTiming } from './timing';

export interface JobSystemOptions<App> {
  db: Knex;
  /** Every connection of the job system (producer, workers, signals) is built from it. */
  redis: RedisConfig;
  dependencies: DependencyReporter;
  /**
   * Writes the queue pause flags PostgreSQL records into Redis: at `init` and whenever the
   * producer connection comes back, so a Redis restarted empty is repaired without a restart.
   */
  reapplyQueueStates?: () => Promise<void>;
  /** Prefix of every BullMQ key (tests and deployments sharing one Redis stay apart). */
  prefix: string;
  registry: JobRegistry<App>;
  /** What job handlers get as `ctx.app`. */
  app: () => App;
  logger: Logger;
  /** Where attempts' ends and durations, and stalled runs, are counted. */
  metrics: Pick<Metrics, 'jobRuns' | 'jobDuration' | 'jobStalled'>;
  now: () => Date;
  /** Jobs this process runs at once per queue (config.jobConcurrency). */
  concurrency: Record<QueueName, number>;
  /** Backoff, sweep interval and other waits (tests make them short). */
  timing?: Partial<JobTiming>;
}
