// SQL for projects: every statement names its organisation (row-level security is the second wall).
import type { Executor } from '../services';
import { isUniqueViolation } from '../orgs/store';
import { prepared, runPrepared } from '../platform/prepared';

export interface ProjectRow {
  id: string;
  orgId: string;
  name: string;
  description: string | null;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

const COLUMNS = ['id', 'org_id', 'name', 'description', 'created_by', 'created_at', 'updated_at'];

const toProject = (r: any): ProjectRow => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  description: r.description,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const NAME_KEY = 'projects_org_id_name_key';

export async function find(db: Executor, orgId: string, id: string): Promise<ProjectRow | null> {
  const row = await db('projects').where({ org_id: orgId, id }).first(COLUMNS);
  return row ? toProject(row) : null;
}

// The list is the hottest tenant read: prepared, so each connection parses and plans it once.
const LIST_FIRST = prepared('projects.list_first', `select ${COLUMNS.join(', ')} from projects where org_id = $1 order by id desc limit $2`);
const LIST_AFTER = prepared('projects.list_after', `select ${COLUMNS.join(', ')} from projects where org_id = $1 and id < $2 order by id desc limit $3`);

/** Newest first (ids sort by creation time). */
export async function list(db: Executor, orgId: string, page: { limit: number; beforeId?: string }): Promise<ProjectRow[]> {
  const rows = page.beforeId ? await runPrepared(db, LIST_AFTER, [orgId, page.beforeId, page.limit]) : await runPrepared(db, LIST_FIRST, [orgId, page.limit]);
  return rows.map(toProject);
}

/** 'name_taken' when another project of the organisation has the name (case-insensitive). */
export async function insert(db: Executor, p: ProjectRow): Promise<'ok' | 'name_taken'> {
  const result: any = await db('projects')
    .insert({ id: p.id, org_id: p.orgId, name: p.name, description: p.description, created_by: p.createdBy, created_at: p.createdAt, updated_at: p.updatedAt })
    .onConflict(db.raw('(org_id, lower(name))'))
    .ignore();
  return result.rowCount === 1 ? 'ok' : 'name_taken';
}

export async function update(db: Executor, orgId: string, id: string, change: { name?: string; description?: string | null; now: Date }): Promise<'ok' | 'name_taken'> {
  try {
    await db('projects')
      .where({ org_id: orgId, id })
      .update({ ...(change.name !== undefined && { name: change.name }), ...(change.description !== undefined && { description: change.description }), updated_at: change.now });
    return 'ok';
  } catch (err) {
    if (isUniqueViolation(err, NAME_KEY)) return 'name_taken';
    throw err;
  }
}

export async function remove(db: Executor, orgId: string, id: string): Promise<void> {
  await db('projects').where({ org_id: orgId, id }).delete();
}
