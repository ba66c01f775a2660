// Queues as operators see them, pause/resume (global: the flag lives in Redis for every
// instance's workers, and in Postgres so it survives restarts), and the jobs overview.
import type { Actor, RequestMeta } from '../audit/service';
import type { JobSystem } from './system';
import type { AuditService } from '../audit/service';
import type { Scope } from '../platform/scope';
import { commonErrors } from '../errors';
import { QUEUES, type QueueName } from './config';
import { lockQueueState, pausedQueueNames, writeQueueState } from './queues-store';
import { countRuns, failuresSince, oldestWaitingSince, type RunCount } from './ops-reads-store';
import { JOB_STATES, type JobState } from './run-lifecycle-store';

export interface QueueView {
  name: string;
  paused: boolean;
  counts: { available: number; running: number; scheduled: number; retryable: number };
  concurrency: number;
}

type By = { actor: Actor; meta: RequestMeta };

const DAY_MS = 24 * 3600 * 1000;

function knownQueue(name: string): QueueName {
  if (!(QUEUES as readonly string[]).includes(name)) throw commonErrors.notFound(`No queue ${name}.`);
  return name as QueueName;
}

type Deps = Scope<{ jobSystem: JobSystem; audit: AuditService }>;

export class QueuesService {
  constructor(private readonly s: Deps) {}

  /** Every queue, sorted by name, with its waiting and running counts. */
  async list(): Promise<QueueView[]> {
    const [paused, runs] = await Promise.all([pausedQueueNames(this.s.db), countRuns(this.s.db)]);
    return this.views(paused, runs);
  }

  private views(paused: Set<string>, runs: RunCount[]): QueueView[] {
    const counts = new Map<string, QueueView['counts']>(QUEUES.map((q) => [q, { available: 0, running: 0, scheduled: 0, retryable: 0 }]));
    for (const { queue, state, count } of runs) {
      const c = counts.get(queue);
      if (c && state in c) c[state as keyof QueueView['counts']] += count;
    }
    return QUEUES.map((name) => ({ name, paused: paused.has(name), counts: counts.get(name)!, concurrency: this.s.jobSystem.concurrencyOf(name) }));
  }

  /** The recorded flag (Postgres), which every instance's workers follow. */
  async isPaused(name: string): Promise<boolean> {
    return (await pausedQueueNames(this.s.db)).has(name);
  }

  pause(name: string, by: By): Promise<QueueView> {
    return this.setPaused(name, true, by);
  }

  resume(name: string, by: By): Promise<QueueView> {
    return this.setPaused(name, false, by);
  }

  /**
   * Applies the flag in Redis first, with no transaction open (Redis down: 503, nothing changes),
   * then records it and its audit event in one transaction; if that fails, Redis is set back.
   * Setting the current state again is a no-op. Postgres is what every start and every Redis
   * reconnection re-applies to Redis (JobSystem.reapply).
   */
  private async setPaused(name: string, paused: boolean, by: By): Promise<QueueView> {
    const queue = knownQueue(name);
    const before = (await pausedQueueNames(this.s.db)).has(queue);
    if (before !== paused) {
      await this.s.jobSystem.setPaused(queue, paused);
      try {
        await this.s.transaction(async (tx) => {
          if ((await lockQueueState(tx.db, queue)) === paused) return;
          await writeQueueState(tx.db, queue, { paused, at: tx.now(), by: by.actor.id });
          await tx.audit.record({ action: paused ? 'ops.queue.paused' : 'ops.queue.resumed', actor: by.actor, target: { kind: 'queue', id: queue }, meta: by.meta });
        });
      } catch (err) {
        await this.s.jobSystem.setPaused(queue, before).catch(() => undefined);
        throw err;
      }
    }
    return (await this.list()).find((q) => q.name === queue)!;
  }

  /** At start-up and when Redis reconnects: Redis gets the flags Postgres recorded (Redis may have been emptied or replaced). */
  async reapplyStates(): Promise<void> {
    const paused = await pausedQueueNames(this.s.db);
    for (const name of QUEUES) await this.s.jobSystem.setPaused(name, paused.has(name));
  }

  /** Counts by state and by kind (every kind defined in code, zero counts included), queues, age of the oldest wait, recent failures. */
  async overview() {
    const now = this.s.now();
    const [paused, runs, oldest, failures] = await Promise.all([
      pausedQueueNames(this.s.db),
      countRuns(this.s.db),
      oldestWaitingSince(this.s.db),
      failuresSince(this.s.db, new Date(now.getTime() - DAY_MS)),
    ]);
    const zero = () => Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    const byState = zero();
    const byKind = new Map(this.s.jobSystem.kinds().map((kind) => [kind.name, zero()]));
    for (const { kind, state, count } of runs) {
      byState[state] += count;
      // Runs of a kind no longer defined in code count in `byState` only.
      const counts = byKind.get(kind);
      if (counts) counts[state] += count;
    }
    return {
      byState,
      byKind: [...byKind].map(([kind, counts]) => ({ kind, counts })),
      queues: this.views(paused, runs),
      oldestWaitingAgeSeconds: oldest ? Math.max(0, Math.floor((now.getTime() - oldest.getTime()) / 1000)) : null,
      failuresLast24h: failures,
      generatedAt: now,
    };
  }
}
