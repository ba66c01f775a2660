// The jobs domain's error codes, declared once (a test checks them against openapi.yaml).
import { defineErrors, type ValidationIssue } from '../errors';
import type { ConfigIssue } from './config';
import type { JobRun } from './run-lifecycle-store';

const jobErrors = defineErrors('jobs', {
  jobFinalized: { code: 'job_finalized', status: 422, detail: 'The job run is already finalized and cannot be cancelled.' },
  jobRunning: { code: 'job_running', status: 422, detail: 'The job run is running; cancel it or wait for it to finish before retrying.' },
  jobPayloadCleared: { code: 'job_payload_cleared', status: 422, detail: 'The job run\'s payload was cleared when it ended; it cannot be retried.' },
  invalidJobConfig: { code: 'invalid_job_config', status: 422, detail: 'The job configuration is not valid.' },
  jobNotRunnable: { code: 'job_not_runnable', status: 422, detail: 'This job kind needs a payload from the application and cannot be run manually.' },
  jobDisabled: { code: 'job_disabled', status: 409, detail: 'This job kind is disabled; enable it before running it.' },
});

/** 422 `job_finalized` for a cancel of a run that has ended. */
export function jobFinalized(run: JobRun) {
  return jobErrors.jobFinalized(`Job run ${run.id} is already ${run.state} and cannot be cancelled.`, {
    errors: [{ location: 'path.id', message: `the run is ${run.state}` }],
  });
}

/** 422 `job_running` for a retry of a running run. */
export function jobRunning(id: number) {
  return jobErrors.jobRunning(`Job run ${id} is running; cancel it or wait for it to finish before retrying.`, {
    errors: [{ location: 'path.id', message: 'the run is running' }],
  });
}

/** 422 `job_payload_cleared` for a retry of a run whose secret or address was erased. */
export function jobPayloadCleared(id: number, why: 'secret' | 'erased') {
  const detail =
    why === 'secret'
      ? `Job run ${id} carried a one-time code that was erased when it ended: retrying it cannot send the code again. The user can ask for a new one.`
      : `Job run ${id} concerned an account that was deleted, and its address was erased: there is no one to send it to.`;
  return jobErrors.jobPayloadCleared(detail, { errors: [{ location: 'path.id', message: "the run's payload was cleared when it ended" }] });
}

/** 422 `invalid_job_config` naming each field of `config` that does not validate. */
export function invalidJobConfig(issues: ConfigIssue[]) {
  const errors: ValidationIssue[] = issues.map((i) => ({ location: `body.config.${i.field}`, message: i.message }));
  return jobErrors.invalidJobConfig(undefined, { errors });
}

/** 422 `job_not_runnable` for a manual run of a kind that needs a payload. */
export function jobNotRunnable(name: string) {
  return jobErrors.jobNotRunnable(`${name} needs a payload from the application and cannot be run manually.`, {
    errors: [{ location: 'path.name', message: `${name} needs a payload and cannot be run manually` }],
  });
}

/** 409 `job_disabled` for a manual run of a disabled kind. */
export function jobDisabled(name: string) {
  return jobErrors.jobDisabled(`${name} is disabled; enable it before running it.`);
}

/** The message of anything thrown, for logs and a run's `errors`. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}
