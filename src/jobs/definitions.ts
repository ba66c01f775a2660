// Job definitions (spec 2.2): every kind of the catalogue with its effective configuration, the
// operator overrides stored in job_definitions (optimistic concurrency on `version`), their
// history, manual runs and the list of scheduled kinds.
//
// A change locks the definition's row (`select … for update`), or, when no row exists yet, creates
// it with `insert … on conflict do nothing`: of two concurrent changes of the same version only
// one can win; the other answers 409 `version_conflict`.
import type { Knex } from 'knex';
import type { AppContext } from '../app-context';
import { recordAudit, type Actor, type RequestMeta } from '../audit/store';
import { AppError, problems, type ValidationIssue } from '../http/problem';
import { DEFAULT_LIMIT, decodeCursor, page } from '../pagination';
import { jobKinds } from './catalog';
import { nextCronTime, validateConfig, type JobConfig, type JobConfigOverride } from './config';
import { formatDuration, parseDuration } from './duration';
import type { JobKind } from './kinds';
import * as store from './store';
import { effectiveConfig } from './system';

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
  lastRun: store.JobRun | null;
  nextRunAt: Date | null;
  updatedAt: Date | null;
  updatedBy: string | null;
}

export interface JobDefinitionChange {
  version: number;
  at: Date;
  by: string | null;
  reason: string;
  action: 'updated' | 'reset';
  configBefore: JobConfig;
  configAfter: JobConfig;
}

export interface ScheduledJob {
  name: string;
  schedule: string;
  queue: string;
  nextRunAt: Date;
  lastRun: store.JobRun | null;
}

type By = { actor: Actor; meta: RequestMeta };

interface DefinitionRow {
  name: string;
  override: JobConfigOverride | null;
  version: number;
  updated_at: Date | null;
  updated_by: string | null;
}

// ----- reading ---------------------------------------------------------------------------------

function kindOf(name: string): JobKind<AppContext> {
  const kind = jobKinds.find((k) => k.name === name);
  if (!kind) throw problems.notFound(`No job definition ${name}.`);
  return kind;
}

function sortedKinds(): JobKind<AppContext>[] {
  return [...jobKinds].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Only the known fields, in a fixed order (a stored override may carry fields a deploy removed). */
function pick<T extends Partial<JobConfig>>(config: T): T {
  const out: Partial<JobConfig> = {};
  for (const field of FIELDS) if (config[field] !== undefined) (out as any)[field] = config[field];
  return out as T;
}

function sameFields(a: Partial<JobConfig>, b: Partial<JobConfig>): boolean {
  return FIELDS.every((f) => a[f] === b[f]);
}

/** Exactly the same stored override (no extra fields, same values). */
function sameOverride(stored: JobConfigOverride, merged: JobConfigOverride): boolean {
  return Object.keys(stored).length === Object.keys(merged).length && sameFields(stored, merged);
}

function effective(kind: JobKind<AppContext>, override: JobConfigOverride | null) {
  const { config, invalidOverride } = effectiveConfig(kind, override);
  return { config: pick(config) as JobConfig, invalidOverride };
}

async function readRow(db: Knex | Knex.Transaction, name: string, forUpdate = false): Promise<DefinitionRow | null> {
  const q = db('job_definitions').where({ name }).first();
  if (forUpdate) q.forUpdate();
  return ((await q) as DefinitionRow | undefined) ?? null;
}

async function view(app: AppContext, kind: JobKind<AppContext>, row: DefinitionRow | null): Promise<JobDefinition> {
  const { config, invalidOverride } = effective(kind, row?.override ?? null);
  return {
    name: kind.name,
    description: kind.description,
    config,
    defaults: pick(kind.defaults),
    modified: !sameFields(config, kind.defaults),
    invalidOverride,
    version: row?.version ?? 1,
    lastRun: await store.lastRunOfKind(app.db, kind.name),
    nextRunAt: config.enabled && config.schedule ? nextCronTime(config.schedule, app.now()) : null,
    updatedAt: row?.updated_at ?? null,
    updatedBy: row?.updated_by ?? null,
  };
}

/** Every kind of the catalogue, sorted by name. */
export async function listDefinitions(app: AppContext): Promise<JobDefinition[]> {
  const rows: DefinitionRow[] = await app.db('job_definitions').select('*');
  const byName = new Map(rows.map((r) => [r.name, r]));
  return Promise.all(sortedKinds().map((kind) => view(app, kind, byName.get(kind.name) ?? null)));
}

export async function getDefinition(app: AppContext, name: string): Promise<JobDefinition> {
  const kind = kindOf(name);
  return view(app, kind, await readRow(app.db, name));
}

/** Enabled kinds with a schedule, soonest `next_run_at` first (ties by name). */
export async function listScheduled(app: AppContext): Promise<ScheduledJob[]> {
  const scheduled: ScheduledJob[] = [];
  for (const def of await listDefinitions(app)) {
    if (def.config.enabled && def.config.schedule && def.nextRunAt) {
      scheduled.push({ name: def.name, schedule: def.config.schedule, queue: def.config.queue, nextRunAt: def.nextRunAt, lastRun: def.lastRun });
    }
  }
  return scheduled.sort((a, b) => a.nextRunAt.getTime() - b.nextRunAt.getTime() || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** A definition's changes, newest first (by version). */
export async function listHistory(app: AppContext, name: string, opts: { limit?: number; cursor?: string }) {
  kindOf(name);
  const limit = opts.limit ?? DEFAULT_LIMIT;
  const key = decodeCursor(opts.cursor, (k): k is { version: number } => Number.isInteger(k?.version));
  const q = app.db('job_definition_history').where({ name }).orderBy('version', 'desc').limit(limit + 1);
  if (key) q.where('version', '<', key.version);
  const rows: JobDefinitionChange[] = (await q).map((r: any) => ({
    version: r.version,
    at: r.at,
    by: r.by,
    reason: r.reason,
    action: r.action,
    configBefore: r.config_before,
    configAfter: r.config_after,
  }));
  return page(rows, limit, (last) => ({ version: last.version }));
}

// ----- changing --------------------------------------------------------------------------------

function versionConflict(current: number | null): AppError {
  const detail = current === null ? 'The job definition changed meanwhile; reload it and try again.' : `The job definition is at version ${current}; reload it and try again.`;
  return new AppError('version_conflict', 409, detail);
}

function invalidConfig(issues: { field: string; message: string }[]): AppError {
  const errors: ValidationIssue[] = issues.map((i) => ({ location: `body.config.${i.field}`, message: i.message }));
  return new AppError('invalid_job_config', 422, 'The job configuration is not valid.', { errors });
}

/** The stored override without the fields that no longer validate (they were already ignored). */
function validPart(kind: JobKind<AppContext>, stored: JobConfigOverride | null): JobConfigOverride {
  if (!stored) return {};
  const kept = pick(stored);
  for (const issue of validateConfig(kept, { needsPayload: kind.needsPayload })) delete kept[issue.field];
  return kept;
}

/** Writes the new row state, the history entry and the audit event (inside the caller's transaction). */
async function recordChange(
  trx: Knex.Transaction,
  app: AppContext,
  kind: JobKind<AppContext>,
  change: { row: DefinitionRow | null; override: JobConfigOverride | null; action: 'updated' | 'reset'; reason: string },
  by: By,
): Promise<void> {
  const current = change.row?.version ?? 1;
  const version = current + 1;
  const at = app.now();
  const before = effective(kind, change.row?.override ?? null).config;
  const after = effective(kind, change.override).config;
  const values = { override: change.override === null ? null : JSON.stringify(change.override), version, updated_at: at, updated_by: by.actor.id };
  if (change.row) {
    // The row is locked; the version condition is a second guard.
    const n = await trx('job_definitions').where({ name: kind.name, version: current }).update(values);
    if (n !== 1) throw versionConflict(null);
  } else {
    // No row yet: a concurrent first change may create it first; then ours is stale.
    const inserted = await trx('job_definitions').insert({ name: kind.name, ...values }).onConflict('name').ignore().returning('name');
    if (inserted.length !== 1) throw versionConflict(null);
  }
  await trx('job_definition_history').insert({
    name: kind.name,
    version,
    at,
    by: by.actor.id,
    reason: change.reason,
    action: change.action,
    config_before: JSON.stringify(before),
    config_after: JSON.stringify(after),
  });
  await recordAudit(trx, {
    action: change.action === 'updated' ? 'ops.job.updated' : 'ops.job.reset',
    actor: by.actor,
    target: { kind: 'job_definition', id: kind.name },
    data: { version, reason: change.reason, config_before: before, config_after: after },
    meta: by.meta,
  });
}

/**
 * Merges `patch` over the stored override, validates it and stores it as the next version. A
 * request that leaves the stored override as it is writes nothing.
 */
export async function updateDefinition(app: AppContext, name: string, input: { config: JobConfigOverride; version: number; reason: string }, by: By): Promise<JobDefinition> {
  const kind = kindOf(name);
  const changed = await app.db.transaction(async (trx) => {
    const row = await readRow(trx, name, true);
    const current = row?.version ?? 1;
    if (input.version !== current) throw versionConflict(current);
    const patch = pick(input.config);
    const issues = validateConfig(patch, { needsPayload: kind.needsPayload });
    if (issues.length) throw invalidConfig(issues);
    if (patch.timeout !== undefined) patch.timeout = formatDuration(parseDuration(patch.timeout)!);
    const merged = pick({ ...validPart(kind, row?.override ?? null), ...patch });
    if (row?.override && sameOverride(row.override, merged)) return false;
    await recordChange(trx, app, kind, { row, override: merged, action: 'updated', reason: input.reason }, by);
    return true;
  });
  if (changed) await app.jobs.publishConfigChange();
  return getDefinition(app, name);
}

/** Removes the override (back to the code defaults); without a stored override it writes nothing. */
export async function resetDefinition(app: AppContext, name: string, input: { version: number; reason: string }, by: By): Promise<JobDefinition> {
  const kind = kindOf(name);
  const changed = await app.db.transaction(async (trx) => {
    const row = await readRow(trx, name, true);
    const current = row?.version ?? 1;
    if (input.version !== current) throw versionConflict(current);
    if (!row || row.override === null) return false;
    await recordChange(trx, app, kind, { row, override: null, action: 'reset', reason: input.reason }, by);
    return true;
  });
  if (changed) await app.jobs.publishConfigChange();
  return getDefinition(app, name);
}

// ----- running now -----------------------------------------------------------------------------

/** A new run, available at once: the row and `ops.job.run_requested` in one transaction, handed over after commit. */
export async function runNow(app: AppContext, name: string, by: By): Promise<store.JobRun> {
  const kind = kindOf(name);
  if (kind.needsPayload) {
    throw new AppError('job_not_runnable', 422, `${name} needs a payload from the application and cannot be run manually.`, {
      errors: [{ location: 'path.name', message: `${name} needs a payload and cannot be run manually` }],
    });
  }
  const { config } = effective(kind, (await readRow(app.db, name))?.override ?? null);
  if (!config.enabled) throw new AppError('job_disabled', 409, `${name} is disabled; enable it before running it.`);
  const run = await app.db.transaction(async (trx) => {
    const created = await app.jobs.enqueue(trx, name, {}, by);
    await recordAudit(trx, {
      action: 'ops.job.run_requested',
      actor: by.actor,
      target: { kind: 'job_definition', id: name },
      data: { job_run_id: created.id },
      meta: by.meta,
    });
    return created;
  });
  await app.jobs.handOver([run]);
  return run;
}
