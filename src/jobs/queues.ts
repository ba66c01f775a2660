// Queues as operators see them, pause/resume (global: the flag lives in Redis for every
// instance's workers, and in Postgres so it survives restarts), and the jobs overview.
import type { AppContext } from '../app-context';
import { recordAudit, type Actor, type RequestMeta } from '../audit/store';
import { problems } from '../http/problem';
import { QUEUES, type QueueName } from './config';
import { JOB_STATES, countByKindAndState, failuresSince, oldestWaitingSince, type JobState } from './store';

export interface QueueView {
  name: string;
  paused: boolean;
  counts: { available: number; running: number; scheduled: number; retryable: number };
  concurrency: number;
}

function knownQueue(name: string): QueueName {
  if (!(QUEUES as readonly string[]).includes(name)) throw problems.notFound(`No queue ${name}.`);
  return name as QueueName;
}

async function pausedQueues(app: AppContext): Promise<Set<string>> {
  const rows = await app.db('queue_states').where({ paused: true }).select('name');
  return new Set(rows.map((r: { name: string }) => r.name));
}

async function waitingCounts(app: AppContext): Promise<Map<string, QueueView['counts']>> {
  const rows: { queue: string; state: JobState; count: number }[] = await app
    .db('job_runs')
    .select('queue', 'state')
    .count('* as count')
    .whereIn('state', ['available', 'running', 'scheduled', 'retryable'])
    .groupBy('queue', 'state');
  const counts = new Map<string, QueueView['counts']>(QUEUES.map((q) => [q, { available: 0, running: 0, scheduled: 0, retryable: 0 }]));
  for (const r of rows) {
    const c = counts.get(r.queue);
    if (c) c[r.state as keyof QueueView['counts']] = Number(r.count);
  }
  return counts;
}

export async function listQueues(app: AppContext): Promise<QueueView[]> {
  const [paused, counts] = await Promise.all([pausedQueues(app), waitingCounts(app)]);
  return QUEUES.map((name) => ({ name, paused: paused.has(name), counts: counts.get(name)!, concurrency: app.jobs.concurrencyOf(name) }));
}

async function getQueue(app: AppContext, name: QueueName): Promise<QueueView> {
  return (await listQueues(app)).find((q) => q.name === name)!;
}

/**
 * Records the flag and its audit event in one transaction and applies it in Redis before the
 * commit: if Redis is down nothing changes (503). Setting the current state again is a no-op.
 */
export async function setQueuePaused(app: AppContext, name: string, paused: boolean, by: { actor: Actor; meta: RequestMeta }): Promise<QueueView> {
  const queue = knownQueue(name);
  await app.db.transaction(async (trx) => {
    const current = await trx('queue_states').where({ name: queue }).forUpdate().first();
    if ((current?.paused ?? false) === paused) return;
    await trx('queue_states')
      .insert({ name: queue, paused, updated_at: app.now(), updated_by: by.actor.id })
      .onConflict('name')
      .merge();
    await recordAudit(trx, { action: paused ? 'ops.queue.paused' : 'ops.queue.resumed', actor: by.actor, target: { kind: 'queue', id: queue }, meta: by.meta });
    await app.jobs.setPaused(queue, paused);
  });
  return getQueue(app, queue);
}

/** At start-up: Redis gets the flags Postgres recorded (Redis may have been emptied or replaced). */
export async function reapplyQueueStates(app: AppContext): Promise<void> {
  const paused = await pausedQueues(app);
  for (const name of QUEUES) await app.jobs.setPaused(name, paused.has(name));
}

export async function jobsOverview(app: AppContext) {
  const now = app.now();
  const [byKindAndState, queues, oldest, failures] = await Promise.all([
    countByKindAndState(app.db),
    listQueues(app),
    oldestWaitingSince(app.db),
    failuresSince(app.db, new Date(now.getTime() - 24 * 3600 * 1000)),
  ]);
  const zero = () => Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
  const byState = zero();
  const byKind = new Map<string, Record<JobState, number>>();
  for (const { kind, state, count } of byKindAndState) {
    byState[state] += Number(count);
    if (!byKind.has(kind)) byKind.set(kind, zero());
    byKind.get(kind)![state] += Number(count);
  }
  return {
    byState,
    byKind: [...byKind].sort(([a], [b]) => a.localeCompare(b)).map(([kind, counts]) => ({ kind, counts })),
    queues,
    oldestWaitingAgeSeconds: oldest ? Math.max(0, Math.floor((now.getTime() - oldest.getTime()) / 1000)) : null,
    failuresLast24h: failures,
    generatedAt: now,
  };
}
