// Domain → API shapes for job runs (one place, used by every ops-jobs and ops-mail handler).
import type { components } from '../../codegen/api-types';
import type { JobRun } from '../../src/jobs/run-lifecycle-store';
import type { JobDefinition, JobDefinitionChange, ScheduledJob } from '../../src/jobs/definitions';

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

// ----- job definitions -------------------------------------------------------------------------

export function toApiDefinition(def: JobDefinition): components['schemas']['JobDefinition'] {
  return {
    name: def.name,
    description: def.description,
    config: def.config,
    defaults: def.defaults,
    modified: def.modified,
    invalid_override: def.invalidOverride,
    version: def.version,
    last_run: def.lastRun ? toApiRun(def.lastRun) : null,
    next_run_at: def.nextRunAt?.toISOString() ?? null,
    updated_at: def.updatedAt?.toISOString() ?? null,
    updated_by: def.updatedBy,
  };
}

export function toApiDefinitionChange(change: JobDefinitionChange): components['schemas']['JobDefinitionChange'] {
  return {
    version: change.version,
    at: change.at.toISOString(),
    by: change.by ?? '',
    reason: change.reason,
    action: change.action,
    config_before: change.configBefore,
    config_after: change.configAfter,
  };
}

export function toApiScheduled(job: ScheduledJob): components['schemas']['JobScheduled'] {
  return {
    name: job.name,
    schedule: job.schedule,
    queue: job.queue,
    next_run_at: job.nextRunAt.toISOString(),
    last_run: job.lastRun ? toApiRun(job.lastRun) : null,
  };
}
