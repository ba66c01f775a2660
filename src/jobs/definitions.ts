// Job definitions (spec 2.2): every kind defined in code with its effective configuration, the
// operator overrides stored in job_definitions (optimistic concurrency on `version`), their
// history, manual runs and the list of scheduled kinds.
//
// A change locks the definition's row (`select … for update`), or, when no row exists yet, creates
// it with `insert … on conflict do nothing`: of two concurrent changes of the same version only
// one can win; the other answers 409 `version_conflict`.
import type { Actor, RequestMeta } from '../audit/service';
import type { JobSystem } from './system';
import type { AuditService } from '../audit/service';
import type { JobOutbox } from './outbox';
import type { Scope } from '../platform/scope';
import { commonErrors } from '../errors';
import { DEFAULT_LIMIT, decodeCursor, page, type PageRequest } from '../pagination';
import { effectiveConfig, nextCronTime, validateConfig, type JobConfig, type JobConfigOverride } from './config';
import * as definitionsStore from './definitions-store';
import type { DefinitionRow } from './definitions-store';
import { formatDuration, parseDuration } from '../config/duration';
import { invalidJobConfig, jobDisabled, jobNotRunnable } from './errors';
import type { JobKind } from './kinds';
import { lastRunOfKind } from './ops-reads-store';
import type { JobRun } from './run-lifecycle-store';

const FIELDS: (keyof JobConfig)[] = ['enabled', 'max_attempts', 'priority', 'queue', 'schedule', 'timeout'];

export interface JobDefinition {
  name: string;
  description: string;
  config: JobConfig;
  defaults: JobConfig;
  /** The effective config differs from the code defaults. */
  modified: boolean;
  /** A stored override no longer validates and is ignored. */
  invalidOverride: boolean;
  version: number;
  lastRun: JobRun | null;
  nextRunAt: Date | null;
  updatedAt: Date | null;
  updatedBy: string | null;
}

export type JobDefinitionChange = definitionsStore.DefinitionChangeRow;

export interface ScheduledJob {
  name: string;
  schedule: string;
  queue: string;
  nextRunAt: Date;
  lastRun: JobRun | null;
}

type By = { actor: Actor; meta: RequestMeta };

// ----- pure helpers ------------------------------------------------------------------------------

/** Only the known fields, in a fixed order (a stored override may carry fields a deploy removed). */
function pick<T extends Partial<JobConfig>>(config: T): T {
  const out: Partial<JobConfig> = {};
  for (const field of FIELDS) if (config[field] !== undefined) (out as Record<string, unknown>)[field] = config[field];
  return out as T;
}

function sameFields(a: Partial<JobConfig>, b: Partial<JobConfig>): boolean {
  return FIELDS.every((f) => a[f] === b[f]);
}

/** Exactly the same stored override (no extra fields, same values). */
function sameOverride(stored: JobConfigOverride, merged: JobConfigOverride): boolean {
  return Object.keys(stored).length === Object.keys(merged).length && sameFields(stored, merged);
}

function effective(kind: JobKind, override: JobConfigOverride | null) {
  const { config, invalidOverride } = effectiveConfig(kind, override);
  return { config: pick(config) as JobConfig, invalidOverride };
}

/** The stored override without the fields that no longer validate (they were already ignored). */
function validPart(kind: JobKind, stored: JobConfigOverride | null): JobConfigOverride {
  if (!stored) return {};
  const kept = pick(stored);
  for (const issue of validateConfig(kept, { needsPayload: kind.needsPayload })) delete kept[issue.field];
  return kept;
}

function versionConflict(current: number | null) {
  const detail = current === null ? 'The job definition changed meanwhile; reload it and try again.' : `The job definition is at version ${current}; reload it and try again.`;
  return commonErrors.versionConflict(detail);
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

type Deps = Scope<{ jobSystem: JobSystem; audit: AuditService; outbox: JobOutbox }>;

export class JobDefinitionsService {
  constructor(private readonly s: Deps) {}

  // ----- reading -------------------------------------------------------------------------------

  private kindOf(name: string): JobKind {
    const kind = this.s.jobSystem.kind(name);
    if (!kind) throw commonErrors.notFound(`No job definition ${name}.`);
    return kind;
  }

  private async view(kind: JobKind, row: DefinitionRow | null): Promise<JobDefinition> {
    const { config, invalidOverride } = effective(kind, row?.override ?? null);
    return {
      name: kind.name,
      description: kind.description,
      config,
      defaults: pick(kind.defaults),
      modified: !sameFields(config, kind.defaults),
      invalidOverride,
      version: row?.version ?? 1,
      lastRun: await lastRunOfKind(this.s.db, kind.name),
      nextRunAt: config.enabled && config.schedule ? nextCronTime(config.schedule, this.s.now()) : null,
      updatedAt: row?.updated_at ?? null,
      updatedBy: row?.updated_by ?? null,
    };
  }

  /** Every kind defined in code, sorted by name. */
  async list(): Promise<JobDefinition[]> {
    const rows = new Map((await definitionsStore.listDefinitionRows(this.s.db)).map((r) => [r.name, r]));
    const kinds = [...this.s.jobSystem.kinds()].sort((a, b) => byName(a.name, b.name));
    return Promise.all(kinds.map((kind) => this.view(kind, rows.get(kind.name) ?? null)));
  }

  async get(name: string): Promise<JobDefinition> {
    const kind = this.kindOf(name);
    return this.view(kind, await definitionsStore.readDefinition(this.s.db, name));
  }

  /** Enabled kinds with a schedule, soonest `next_run_at` first (ties by name). */
  async listScheduled(): Promise<ScheduledJob[]> {
    const scheduled: ScheduledJob[] = [];
    for (const def of await this.list()) {
      if (def.config.enabled && def.config.schedule && def.nextRunAt) {
        scheduled.push({ name: def.name, schedule: def.config.schedule, queue: def.config.queue, nextRunAt: def.nextRunAt, lastRun: def.lastRun });
      }
    }
    return scheduled.sort((a, b) => a.nextRunAt.getTime() - b.nextRunAt.getTime() || byName(a.name, b.name));
  }

  /** A definition's changes, newest first (by version). */
  async listHistory(name: string, opts: PageRequest) {
    this.kindOf(name);
    const limit = opts.limit ?? DEFAULT_LIMIT;
    const key = decodeCursor(opts.cursor, (k): k is { version: number } => Number.isInteger(k?.version));
    const rows = await definitionsStore.listDefinitionChanges(this.s.db, name, { beforeVersion: key?.version, limit: limit + 1 });
    return page(rows, limit, (last) => ({ version: last.version }));
  }

  // ----- changing ------------------------------------------------------------------------------

  /**
   * Merges `input.config` over the stored override, validates it and stores it as the next
   * version. A request that leaves the stored override as it is writes nothing.
   */
  async update(name: string, input: { config: JobConfigOverride; version: number; reason: string }, by: By): Promise<JobDefinition> {
    const kind = this.kindOf(name);
    const changed = await this.s.transaction(async (tx) => {
      const row = await definitionsStore.readDefinition(tx.db, name, { forUpdate: true });
      const current = row?.version ?? 1;
      if (input.version !== current) throw versionConflict(current);
      const patch = pick(input.config);
      const issues = validateConfig(patch, { needsPayload: kind.needsPayload });
      if (issues.length) throw invalidJobConfig(issues);
      if (patch.timeout !== undefined) patch.timeout = formatDuration(parseDuration(patch.timeout)!);
      const merged = pick({ ...validPart(kind, row?.override ?? null), ...patch });
      if (row?.override && sameOverride(row.override, merged)) return false;
      await recordChange(tx, kind, { row, override: merged, action: 'updated', reason: input.reason }, by);
      return true;
    });
    if (changed) await this.s.jobSystem.publishConfigChange();
    return this.get(name);
  }

  /** Removes the override (back to the code defaults); without a stored override it writes nothing. */
  async reset(name: string, input: { version: number; reason: string }, by: By): Promise<JobDefinition> {
    const kind = this.kindOf(name);
    const changed = await this.s.transaction(async (tx) => {
      const row = await definitionsStore.readDefinition(tx.db, name, { forUpdate: true });
      const current = row?.version ?? 1;
      if (input.version !== current) throw versionConflict(current);
      if (!row || row.override === null) return false;
      await recordChange(tx, kind, { row, override: null, action: 'reset', reason: input.reason }, by);
      return true;
    });
    if (changed) await this.s.jobSystem.publishConfigChange();
    return this.get(name);
  }

  // ----- running now ---------------------------------------------------------------------------

  /** A new run, available at once: the row and `ops.job.run_requested` in one transaction, handed over after commit. */
  async runNow(name: string, by: By): Promise<JobRun> {
    const kind = this.kindOf(name);
    if (kind.needsPayload) throw jobNotRunnable(name);
    const { config } = effective(kind, (await definitionsStore.readDefinition(this.s.db, name))?.override ?? null);
    if (!config.enabled) throw jobDisabled(name);
    return this.s.transaction(async (tx) => {
      const run = await tx.outbox.enqueue(name, {}, by);
      await tx.audit.record({
        action: 'ops.job.run_requested',
        actor: by.actor,
        target: { kind: 'job_definition', id: name },
        data: { job_run_id: run.id },
        meta: by.meta,
      });
      return run;
    });
  }
}

/** Writes the new row state, the history entry and the audit event (inside the caller's transaction). */
async function recordChange(
  tx: Scope<{ audit: AuditService }>,
  kind: JobKind,
  change: { row: DefinitionRow | null; override: JobConfigOverride | null; action: 'updated' | 'reset'; reason: string },
  by: By,
): Promise<void> {
  const current = change.row?.version ?? 1;
  const version = current + 1;
  const at = tx.now();
  const before = effective(kind, change.row?.override ?? null).config;
  const after = effective(kind, change.override).config;
  const values = { override: change.override, version, updatedAt: at, updatedBy: by.actor.id };
  // The row is locked; the version condition is a second guard. Without a row, a concurrent first
  // change may create it first; then ours is stale.
  const written = change.row ? await definitionsStore.updateDefinition(tx.db, kind.name, current, values) : await definitionsStore.insertDefinition(tx.db, kind.name, values);
  if (!written) throw versionConflict(null);
  await definitionsStore.insertDefinitionChange(tx.db, kind.name, { version, at, by: by.actor.id, reason: change.reason, action: change.action, configBefore: before, configAfter: after });
  await tx.audit.record({
    action: change.action === 'updated' ? 'ops.job.updated' : 'ops.job.reset',
    actor: by.actor,
    target: { kind: 'job_definition', id: kind.name },
    data: { version, reason: change.reason, config_before: before, config_after: after },
    meta: by.meta,
  });
}
