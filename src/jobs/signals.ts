// Signals between instances, over Redis: "cancel this running run" (BullMQ's cancelJob only
// reaches its own worker, so the request is broadcast to whichever instance runs it) and "a job
// definition changed" (every instance reloads its configs; workers re-apply schedules).
import type Redis from 'ioredis';
import type { Logger } from '../logger';
import { openRedis, type RedisConfig } from '../platform/redis';
import { errorMessage } from './errors';
import type { JobTiming } from './timing';

const CANCEL_CHANNEL = 'jobs:cancel';
const CONFIG_CHANNEL = 'jobs:config';

export interface SignalsDeps {
  redis: RedisConfig;
  prefix: string;
  /** The producer connection (publish and cancel marks fail fast while Redis is down). */
  producer: Redis;
  logger: Logger;
  timing: JobTiming;
  /** A cancel for `runId` arrived (from any instance, this one included). */
  onCancel: (runId: number) => void;
  /** Another instance changed a job definition. */
  onConfigChanged: () => Promise<void>;
}

export class Signals {
  private subscriber: Redis | null = null;

  constructor(private readonly deps: SignalsDeps) {}

  /** Listens for the signals of every instance (API or worker). */
  subscribe(): void {
    const subscriber = openRedis(this.deps.redis, { maxRetriesPerRequest: null });
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined);
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel(CANCEL_CHANNEL)) this.deps.onCancel(Number(message));
      else void this.deps.onConfigChanged();
    });
    // Not awaited: with Redis down this waits for it, and ioredis re-subscribes after reconnects.
    subscriber.subscribe(this.channel(CANCEL_CHANNEL), this.channel(CONFIG_CHANNEL)).catch((err) => {
      this.deps.logger.error('cannot subscribe to job signals', { error: errorMessage(err) });
    });
  }

  /**
   * Signals a running run on whichever instance runs it. The request is also kept in Redis for a
   * while (`timing.cancelMarkTtlSeconds`): an attempt that ends (fails) as the signal passes, or a
   * worker that died with the run, does not start another attempt.
   */
  async broadcastCancel(runId: number): Promise<void> {
    await this.deps.producer.set(this.cancelKey(runId), '1', 'EX', this.deps.timing.cancelMarkTtlSeconds);
    await this.deps.producer.publish(this.channel(CANCEL_CHANNEL), String(runId));
  }

  async cancelRequested(runId: number): Promise<boolean> {
    return (await this.deps.producer.exists(this.cancelKey(runId))) === 1;
  }

  /** Forgets a cancel request (an operator retried the run); best effort. */
  async clearCancel(runId: number): Promise<void> {
    await this.deps.producer.del(this.cancelKey(runId)).catch(() => undefined);
  }

  /** Tells the other instances that a definition changed (best effort: they also reload on start). */
  async publishConfigChange(): Promise<void> {
    await this.deps.producer.publish(this.channel(CONFIG_CHANNEL), '1').catch(() => undefined);
  }

  stop(): void {
    this.subscriber?.disconnect();
  }

  private channel(name: string): string {
    return `${this.deps.prefix}:${name}`;
  }

  private cancelKey(runId: number): string {
    return `${this.deps.prefix}:cancel:${runId}`;
  }
}
