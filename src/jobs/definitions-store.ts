// job_definitions (operator overrides, optimistic concurrency on `version`) and
// job_definition_history: the only file with SQL for them.
import type { JobConfig, JobConfigOverride } from './config';
import type { Db } from '../platform/database';


export interface DefinitionRow {
  name: string;
  override: JobConfigOverride | null;
  version: number;
  updated_at: Date | null;
  updated_by: string | null;
}

/** A job_definition_history row as pg returns it. */
interface DefinitionChangeRecord {
  version: number;
  at: Date;
  by: string | null;
  reason: string;
  action: DefinitionChangeRow['action'];
  config_before: JobConfig;
  config_after: JobConfig;
}

export interface DefinitionChangeRow {
  version: number;
  at: Date;
  by: string | null;
  reason: string;
  action: 'updated' | 'reset';
  configBefore: JobConfig;
  configAfter: JobConfig;
}

/** Every stored override by kind name (null: reset to the defaults). */
export async function readOverrides(db: Db): Promise<Map<string, JobConfigOverride | null>> {
  const rows: Pick<DefinitionRow, 'name' | 'override'>[] = await db('job_definitions').select('name', 'override');
  return new Map(rows.map((r) => [r.name, r.override]));
}

export async function listDefinitionRows(db: Db): Promise<DefinitionRow[]> {
  return db('job_definitions').select('name', 'override', 'version', 'updated_at', 'updated_by');
}

/** One definition's row; `forUpdate` locks it until the transaction ends. */
export async function readDefinition(db: Db, name: string, opts: { forUpdate?: boolean } = {}): Promise<DefinitionRow | null> {
  const q = db('job_definitions').select('name', 'override', 'version', 'updated_at', 'updated_by').where({ name }).first();
  if (opts.forUpdate) q.forUpdate();
  return ((await q) as DefinitionRow | undefined) ?? null;
}

interface DefinitionValues {
  override: JobConfigOverride | null;
  version: number;
  updatedAt: Date;
  updatedBy: string | null;
}

const columns = (values: DefinitionValues) => ({
  override: values.override === null ? null : JSON.stringify(values.override),
  version: values.version,
  updated_at: values.updatedAt,
  updated_by: values.updatedBy,
});

/** Moves a definition from version `from` to `values`; false when it was not at `from`. */
export async function updateDefinition(db: Db, name: string, from: number, values: DefinitionValues): Promise<boolean> {
  return (await db('job_definitions').where({ name, version: from }).update(columns(values))) === 1;
}

/** Creates a definition's first row; false when a concurrent change created it first. */
export async function insertDefinition(db: Db, name: string, values: DefinitionValues): Promise<boolean> {
  const inserted = await db('job_definitions').insert({ name, ...columns(values) }).onConflict('name').ignore().returning('name');
  return inserted.length === 1;
}

export async function insertDefinitionChange(db: Db, name: string, change: DefinitionChangeRow): Promise<void> {
  await db('job_definition_history').insert({
    name,
    version: change.version,
    at: change.at,
    by: change.by,
    reason: change.reason,
    action: change.action,
    config_before: JSON.stringify(change.configBefore),
    config_after: JSON.stringify(change.configAfter),
  });
}

/** A definition's changes, newest first; `beforeVersion` is the cursor of the next page. */
export async function listDefinitionChanges(db: Db, name: string, opts: { beforeVersion?: number; limit: number }): Promise<DefinitionChangeRow[]> {
  const q = db('job_definition_history').where({ name }).orderBy('version', 'desc').limit(opts.limit);
  if (opts.beforeVersion !== undefined) q.where('version', '<', opts.beforeVersion);
  return (await q).map((r: DefinitionChangeRecord) => ({
    version: r.version,
    at: r.at,
    by: r.by,
    reason: r.reason,
    action: r.action,
    configBefore: r.config_before,
    configAfter: r.config_after,
  }));
}
