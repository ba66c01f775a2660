// Operator actions on job runs: list, get, cancel, retry.
import type { AppContext } from '../app-context';
import { recordAudit, type Actor, type RequestMeta } from '../audit/store';
import { AppError, problems } from '../http/problem';
import { DEFAULT_LIMIT, decodeCursor, page } from '../pagination';
import * as store from './store';

export async function listRuns(app: AppContext, filter: Omit<store.RunFilter, 'beforeId'>, opts: { limit?: number; cursor?: string }) {
  const limit = opts.limit ?? DEFAULT_LIMIT;
  const key = decodeCursor(opts.cursor, (k): k is { id: number } => Number.isInteger(k?.id));
  const rows = await store.listRuns(app.db, { ...filter, beforeId: key?.id }, limit + 1);
  return page(rows, limit, (last) => ({ id: last.id }));
}

export async function getRun(app: AppContext, id: number): Promise<store.JobRun> {
  const run = await store.getRun(app.db, id);
  if (!run) throw problems.notFound(`No job run ${id}.`);
  return run;
}

/**
 * A waiting run is cancelled at once and leaves its queue; a running one is signalled on whichever
 * instance runs it and ends `cancelled` when its handler stops (`accepted: true`, the run still
 * shows `running`). A finalized run answers 422 `job_finalized`.
 */
export async function cancelRun(app: AppContext, id: number, by: { actor: Actor; meta: RequestMeta }) {
  const run = await getRun(app, id);
  if (store.FINAL_STATES.includes(run.state)) throw jobFinalized(run);
  if (store.WAITING_STATES.includes(run.state)) {
    const cancelled = await app.db.transaction(async (trx) => {
      const row = await store.cancelRun(trx, id, store.WAITING_STATES, app.now());
      if (row) await recordAudit(trx, { action: 'ops.job_run.cancelled', actor: by.actor, target: { kind: 'job_run', id: String(id) }, data: { kind: row.kind, state_before: run.state }, meta: by.meta });
      return row;
    });
    if (cancelled) {
      await app.jobs.removeFromQueue(cancelled);
      return { run: cancelled, accepted: false };
    }
    // It started meanwhile: fall through and signal it.
  }
  // What the operator's request found: the 202 answer shows the run as it was signalled (`running`),
  // even when the attempt stops before this answer is sent.
  const signalled = run.state === 'running' ? run : await getRun(app, id);
  if (store.FINAL_STATES.includes(signalled.state)) throw jobFinalized(signalled); // it ran to its end meanwhile
  // The audit event commits only once the signal went out (Redis down: 503, nothing recorded).
  await app.db.transaction(async (trx) => {
    await recordAudit(trx, { action: 'ops.job_run.cancelled', actor: by.actor, target: { kind: 'job_run', id: String(id) }, data: { kind: run.kind, state_before: 'running' }, meta: by.meta });
    await app.jobs.broadcastCancel(id);
  });
  const after = await getRun(app, id);
  if (store.WAITING_STATES.includes(after.state)) {
    // The attempt failed as the signal went out (it found no active job): cancel the wait at once.
    const cancelled = await store.cancelRun(app.db, id, store.WAITING_STATES, app.now());
    if (cancelled) {
      await app.jobs.removeFromQueue(cancelled);
      return { run: cancelled, accepted: false };
    }
  }
  return { run: signalled.state === 'running' ? signalled : after, accepted: true };
}

function jobFinalized(run: store.JobRun): AppError {
  return new AppError('job_finalized', 422, `Job run ${run.id} is already ${run.state} and cannot be cancelled.`, {
    errors: [{ location: 'path.id', message: `the run is ${run.state}` }],
  });
}

/** Makes a waiting or finalized run available now (attempts kept); 422 `job_running` for a running one. */
export async function retryRun(app: AppContext, id: number, by: { actor: Actor; meta: RequestMeta }) {
  const run = await getRun(app, id);
  if (run.state === 'running') {
    throw new AppError('job_running', 422, `Job run ${id} is running; cancel it or wait for it to finish before retrying.`, {
      errors: [{ location: 'path.id', message: 'the run is running' }],
    });
  }
  if (run.state === 'available') return run;
  const updated = await app.db.transaction(async (trx) => {
    const row = await store.makeAvailable(trx, id, app.now());
    if (row) await recordAudit(trx, { action: 'ops.job_run.retried', actor: by.actor, target: { kind: 'job_run', id: String(id) }, data: { kind: row.kind, state_before: run.state }, meta: by.meta });
    return row;
  });
  if (!updated) return getRun(app, id); // it moved on meanwhile (e.g. started): report what it is now
  await app.jobs.requeueNow(updated);
  return updated;
}
