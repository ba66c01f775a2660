// BullMQ as the job system's producer side sees it: one Redis connection that fails fast while
// Redis is down (the outbox keeps the run and the sweeper retries), a Queue per queue name, and
// the BullMQ job of a run.
import { Queue } from 'bullmq';
import type Redis from 'ioredis';
import { DependencyUnavailable } from '../platform/dependencies';
import { failFast, openRedis, type RedisConfig } from '../platform/redis';
import { QUEUES } from './config';
import type { JobRun } from './run-lifecycle-store';

/**
 * The BullMQ job id of a run: `run-<id>`. BullMQ 6 refuses integer custom ids (they would clash
 * with its own counter), so the run id is kept with a fixed prefix: still one BullMQ job per run.
 */
export function bullJobId(runId: number): string {
  return `run-${runId}`;
}

/**
 * A run's BullMQ job data: the run, and the schedule it was handed over for. A delayed job whose
 * schedule is no longer the run's was handed over before an operator put the run back in line.
 */
export function runJobData(run: JobRun): { runId: number; scheduledAt: number } {
  return { runId: run.id, scheduledAt: run.scheduledAt.getTime() };
}

export class BullQueues {
  readonly queues = new Map<string, Queue>();
  /** Also carries the cross-instance signals (publish, cancel marks). */
  readonly producer: Redis;

  constructor(redis: RedisConfig, readonly prefix: string) {
    // Bounded like the requests' connection: a request's hand-over after its commit never hangs.
    this.producer = openRedis(redis, { ...failFast(redis.timeouts), lazyConnect: true });
    this.producer.on('error', () => undefined); // reported by the job system (see system.ts)
    this.producer.connect().catch(() => undefined);
    for (const name of QUEUES) {
      const queue = new Queue(name, { connection: this.producer, prefix });
      queue.on('error', () => undefined); // reported by the callers that fail
      this.queues.set(name, queue);
    }
  }

  get ready(): boolean {
    return this.producer.status === 'ready';
  }

  /**
   * BullMQ waits for a connection that is not ready yet (Redis down since start) instead of failing:
   * producer-side calls fail at once instead, and the outbox keeps the run.
   */
  assertReady(): void {
    if (!this.ready) throw new DependencyUnavailable('redis', `redis is not reachable (${this.producer.status})`);
  }

  /** The queue a run goes to (`default` for a queue a deploy removed). */
  of(run: JobRun): Queue {
    return this.queues.get(run.queue) ?? this.queues.get('default')!;
  }

  /** The state of the run's BullMQ job, or null when BullMQ holds none. */
  async jobState(run: JobRun): Promise<string | null> {
    this.assertReady();
    const job = await this.of(run).getJob(bullJobId(run.id));
    return job ? job.getState() : null;
  }

  /**
   * Starts the run's delayed job now if it waits for a schedule the run no longer has (retried
   * since its hand-over, e.g. while Redis was down); answers whether it did. Throws if the job is
   * not delayed (any more).
   */
  async promoteIfRetried(run: JobRun): Promise<boolean> {
    const job = await this.of(run).getJob(bullJobId(run.id));
    if (!job || run.state !== 'available' || job.data?.scheduledAt === run.scheduledAt.getTime()) return false;
    await job.promote();
    return true;
  }

  async removeJob(run: JobRun): Promise<void> {
    await this.of(run).remove(bullJobId(run.id));
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
    this.producer.disconnect();
  }
}
