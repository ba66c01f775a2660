// Operator actions on job runs: list, get, cancel, retry; and the retention of finalized runs.
import type { Actor, RequestMeta } from '../audit/service';
import type { JobSystem } from './system';
import type { Scope } from '../platform/scope';
import type { AuditService } from '../audit/service';
import { commonErrors } from '../errors';
import { DEFAULT_LIMIT, decodeCursor, page, type PageRequest } from '../pagination';
import { jobFinalized, jobPayloadCleared, jobRunning } from './errors';
import { listRuns, type RunFilter } from './ops-reads-store';
import * as store from './run-lifecycle-store';

type By = { actor: Actor; meta: RequestMeta };

/** Finalized runs are deleted this many at a time (short statements, short locks). */
const PRUNE_BATCH = 1_000;

type Deps = Scope<{ audit: AuditService; jobSystem: JobSystem }>;

export class JobRunsService {
  constructor(private readonly s: Deps) {}

  /** Newest first, a page at a time. */
  async list(filter: Omit<RunFilter, 'beforeId'>, opts: PageRequest) {
    const limit = opts.limit ?? DEFAULT_LIMIT;
    const key = decodeCursor(opts.cursor, (k): k is { id: number } => Number.isInteger(k?.id));
    const rows = await listRuns(this.s.db, { ...filter, beforeId: key?.id }, limit + 1);
    return page(rows, limit, (last) => ({ id: last.id }));
  }

  async get(id: number): Promise<store.JobRun> {
    const run = await store.getRun(this.s.db, id);
    if (!run) throw commonErrors.notFound(`No job run ${id}.`);
    return run;
  }

  /**
   * A waiting run is cancelled at once and leaves its queue; a running one is signalled on whichever
   * instance runs it and ends `cancelled` when its handler stops (`accepted: true`, the run still
   * shows `running`). A finalized run answers 422 `job_finalized`.
   */
  async cancel(id: number, by: By): Promise<{ run: store.JobRun; accepted: boolean }> {
    const jobs = this.s.jobSystem;
    const run = await this.get(id);
    if (store.FINAL_STATES.includes(run.state)) throw jobFinalized(run);
    if (store.WAITING_STATES.includes(run.state)) {
      const cancelled = await this.s.transaction(async (tx) => {
        const row = await store.cancelRun(tx.db, id, store.WAITING_STATES, tx.now());
        if (row) await tx.audit.record(cancelledEvent(row, run.state, by));
        return row;
      });
      if (cancelled) {
        await jobs.removeFromQueue(cancelled);
        return { run: cancelled, accepted: false };
      }
      // It started meanwhile: fall through and signal it.
    }
    // What the operator's request found: the 202 answer shows the run as it was signalled (`running`),
    // even when the attempt stops before this answer is sent.
    const signalled = run.state === 'running' ? run : await this.get(id);
    if (store.FINAL_STATES.includes(signalled.state)) throw jobFinalized(signalled); // it ran to its end meanwhile
    // The signal first, with no transaction open (Redis down: 503, nothing recorded), then its event.
    await jobs.broadcastCancel(id);
    await this.s.audit.record(cancelledEvent(run, 'running', by));
    const after = await this.get(id);
    if (store.WAITING_STATES.includes(after.state)) {
      // The attempt failed as the signal went out (it found no active job): cancel the wait at once.
      const cancelled = await store.cancelRun(this.s.db, id, store.WAITING_STATES, this.s.now());
      if (cancelled) {
        await jobs.removeFromQueue(cancelled);
        return { run: cancelled, accepted: false };
      }
    }
    return { run: signalled.state === 'running' ? signalled : after, accepted: true };
  }

  /**
   * Makes a waiting or finalized run available now (attempts kept); 422 `job_running` for a running
   * one, 422 `job_payload_cleared` for one whose secret or address was erased when it ended.
   */
  async retry(id: number, by: By): Promise<store.JobRun> {
    const run = await this.get(id);
    if (run.state === 'running') throw jobRunning(id);
    if (run.state === 'available') return run;
    const cleared = store.payloadCleared(run);
    if (cleared) throw jobPayloadCleared(id, cleared);
    const updated = await this.s.transaction(async (tx) => {
      const row = await store.makeAvailable(tx.db, id, tx.now());
      if (row) {
        await tx.audit.record({
          action: 'ops.job_run.retried',
          actor: by.actor,
          target: { kind: 'job_run', id: String(id) },
          data: { kind: row.kind, state_before: run.state },
          meta: by.meta,
        });
      }
      return row;
    });
    if (!updated) return this.get(id); // it moved on meanwhile (e.g. started): report what it is now
    await this.s.jobSystem.requeueNow(updated);
    return updated;
  }

  /** Deletes the runs finalized before `before`, in batches; answers how many. */
  pruneFinalized(before: Date): Promise<number> {
    return store.deleteFinalizedBefore(this.s.db, before, PRUNE_BATCH);
  }
}

function cancelledEvent(run: store.JobRun, stateBefore: store.JobState, by: By) {
  return {
    action: 'ops.job_run.cancelled',
    actor: by.actor,
    target: { kind: 'job_run', id: String(run.id) },
    data: { kind: run.kind, state_before: stateBefore },
    meta: by.meta,
  };
}
