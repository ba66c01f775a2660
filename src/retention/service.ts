// Retention: enforcing every policy (the job `service.retention.enforce`) and describing them
// (GET /ops/retention).
import type { RuntimeSettings } from '../settings/runtime';
import { durationMs } from '../config/settings-catalog';
import { RETENTION_POLICIES, type RetentionScope } from './policies';
import * as store from './store';

const JOB = 'service.retention.enforce';

export interface RetentionPolicyView {
  name: string;
  appliesTo: string;
  keep: string;
  setting: string;
  lastRunAt: Date | null;
  nextRunAt: Date | null;
  lastDeleted: number | null;
}

export class RetentionService {
  constructor(private readonly s: RetentionScope & { runtimeSettings: RuntimeSettings }) {}

  /**
   * Applies every policy with the period in force now, recording each one's count as soon as it
   * is done (an interrupted run still shows what it did). `checkpoint` runs between policies
   * (the job's abort signal).
   */
  async enforce(checkpoint: () => void = () => undefined): Promise<Record<string, number>> {
    const deleted: Record<string, number> = {};
    for (const policy of RETENTION_POLICIES) {
      checkpoint();
      const keep = this.s.runtimeSettings.get(policy.setting) as string;
      const now = this.s.now();
      const count = await policy.enforce(this.s, new Date(now.getTime() - durationMs(keep)));
      await store.recordRun(this.s.db, { policy: policy.name, last_run_at: now, last_deleted: count, keep });
      deleted[policy.name] = count;
    }
    return deleted;
  }

  async list(): Promise<RetentionPolicyView[]> {
    const [runs, job] = await Promise.all([store.readRuns(this.s.db), this.s.jobDefinitions.get(JOB)]);
    const byPolicy = new Map(runs.map((r) => [r.policy, r]));
    return RETENTION_POLICIES.map((p) => {
      const run = byPolicy.get(p.name);
      return {
        name: p.name,
        appliesTo: p.appliesTo,
        keep: this.s.runtimeSettings.get(p.setting) as string,
        setting: p.setting,
        lastRunAt: run?.last_run_at ?? null,
        nextRunAt: job.nextRunAt,
        lastDeleted: run ? Number(run.last_deleted) : null,
      };
    });
  }
}
