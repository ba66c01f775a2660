// The job system's waits and intervals. Production uses the defaults; tests inject small values
// (JobSystemOptions.timing) so a retry or a sweep takes milliseconds instead of seconds.
export interface JobTiming {
  /** Exponential backoff between attempts: base, 2·base, 4·base… (BullMQ's own formula, mirrored in job_runs). */
  backoffMs: number;
  /** How often a worker process sweeps the outbox. */
  sweepIntervalMs: number;
  /** The sweeper leaves runs committed less than this ago to their own hand-over. */
  handOverGraceMs: number;
  /** A run due (or past its timeout) this long while BullMQ does not hold its job was lost by BullMQ. */
  overdueMs: number;
  /** How long an operator retry waits in the background for a finishing BullMQ job to leave. */
  requeueWaitMs: number;
  /** How often that background wait asks BullMQ. */
  requeuePollMs: number;
  /** A cancel request for a running run outlives the broadcast this long (see `Signals.broadcastCancel`). */
  cancelMarkTtlSeconds: number;
}

export const DEFAULT_TIMING: JobTiming = {
  backoffMs: 1_000,
  sweepIntervalMs: 5_000,
  handOverGraceMs: 2_000,
  overdueMs: 60_000,
  requeueWaitMs: 60_000,
  requeuePollMs: 50,
  cancelMarkTtlSeconds: 24 * 3600,
};

/** The delay before the retry that follows `failedAttempts` failures (1 → base, 2 → 2·base…). */
export function backoffDelay(timing: Pick<JobTiming, 'backoffMs'>, failedAttempts: number): number {
  return timing.backoffMs * 2 ** (failedAttempts - 1);
}
