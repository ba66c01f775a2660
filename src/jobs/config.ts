// Job configuration (spec 2.3): code defaults, operator overrides, and the rules both must obey.
import { CronExpressionParser } from 'cron-parser';
import { parseDuration } from '../config/duration';

export interface JobConfig {
  enabled: boolean;
  max_attempts: number;
  priority: number;
  queue: string;
  schedule: string | null;
  timeout: string;
}

export type JobConfigOverride = Partial<JobConfig>;

export interface ConfigIssue {
  field: keyof JobConfig;
  message: string;
}

export const QUEUES = ['default', 'mail', 'maintenance'] as const;
export type QueueName = (typeof QUEUES)[number];

const MIN_TIMEOUT_MS = 1_000;
const MAX_TIMEOUT_MS = 24 * 3600 * 1000;

/** Next time a five-field cron expression fires after `from` (UTC), or null if it is not valid. */
export function nextCronTime(schedule: string, from: Date): Date | null {
  if (schedule.trim().split(/\s+/).length !== 5) return null;
  try {
    return CronExpressionParser.parse(schedule, { tz: 'UTC', currentDate: from }).next().toDate();
  } catch {
    return null;
  }
}

/** Checks an override (or a full config) field by field; `needsPayload` kinds cannot be scheduled. */
export function validateConfig(config: JobConfigOverride, opts: { needsPayload: boolean }): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (config.max_attempts !== undefined && (!Number.isInteger(config.max_attempts) || config.max_attempts < 1 || config.max_attempts > 100)) {
    issues.push({ field: 'max_attempts', message: 'must be an integer from 1 to 100' });
  }
  if (config.priority !== undefined && (!Number.isInteger(config.priority) || config.priority < 0 || config.priority > 1000)) {
    issues.push({ field: 'priority', message: 'must be an integer from 0 to 1000' });
  }
  if (config.queue !== undefined && !(QUEUES as readonly string[]).includes(config.queue)) {
    issues.push({ field: 'queue', message: `unknown queue; known queues: ${QUEUES.join(', ')}` });
  }
  if (config.schedule !== undefined && config.schedule !== null) {
    if (opts.needsPayload) issues.push({ field: 'schedule', message: 'this kind needs a payload and cannot be scheduled' });
    else if (!nextCronTime(config.schedule, new Date())) issues.push({ field: 'schedule', message: 'must be a valid five-field cron expression (UTC)' });
  }
  if (config.timeout !== undefined) {
    const ms = parseDuration(config.timeout);
    if (ms === null) issues.push({ field: 'timeout', message: 'must be a duration such as 5m0s, 90s or 1h' });
    else if (ms < MIN_TIMEOUT_MS || ms > MAX_TIMEOUT_MS) issues.push({ field: 'timeout', message: 'must be from 1s to 24h0m0s' });
  }
  return issues;
}

/**
 * The configuration a kind runs with: defaults, then the stored override if it still validates.
 * Takes only what it reads of a JobKind, so that kinds.ts depends on this file and not the reverse.
 */
export function effectiveConfig(
  kind: { defaults: JobConfig; needsPayload: boolean },
  override: JobConfigOverride | null,
): { config: JobConfig; invalidOverride: boolean } {
  if (!override) return { config: kind.defaults, invalidOverride: false };
  const invalid = validateConfig(override, { needsPayload: kind.needsPayload }).length > 0;
  return invalid ? { config: kind.defaults, invalidOverride: true } : { config: { ...kind.defaults, ...override }, invalidOverride: false };
}
