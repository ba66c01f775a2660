// Domain → API shapes for job runs (one place, used by every ops-jobs and ops-mail handler).
import type { components } from '../../codegen/api-types';
import type { JobRun } from '../../src/jobs/store';

export type ApiJobRun = components['schemas']['JobRun'];

export function toApiRun(run: JobRun): ApiJobRun {
  return {
    id: run.id,
    kind: run.kind,
    queue: run.queue,
    priority: run.priority,
    state: run.state,
    attempt: run.attempt,
    max_attempts: run.maxAttempts,
    created_at: run.createdAt.toISOString(),
    scheduled_at: run.scheduledAt.toISOString(),
    attempted_at: run.attemptedAt?.toISOString() ?? null,
    finalized_at: run.finalizedAt?.toISOString() ?? null,
    errors: run.errors,
    actor_kind: run.actorKind as ApiJobRun['actor_kind'],
    actor_id: run.actorId,
    request_id: run.requestId,
  };
}
