// SQL for projects: every statement names its organisation (row-level security is the second wall).
import type { QueryResult } from 'pg';
import type { Db } from '../platform/database';
import { isUniqueViolation } from '../platform/database';
import type { Role } from '../orgs/policy';
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

/** A projects row as COLUMNS selects it. */
type ProjectRecord = {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  created_by: string;
  created_at: Date;
  updated_at: Date;
};

/** A row of app_org_projects: the caller's role and the organisation's deletion with a project (its columns all null on the one row of an empty page). */
type ProjectPageRecord = { member_role: Role; org_deleted_at: Date | null } & (ProjectRecord | { [K in keyof ProjectRecord]: null });

const toProject = (r: ProjectRecord): ProjectRow => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  description: r.description,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const NAME_KEY = 'projects_org_id_name_key';

export async function find(db: Db, orgId: string, id: string): Promise<ProjectRow | null> {
  const row = await db('projects').where({ org_id: orgId, id }).first(COLUMNS);
  return row ? toProject(row) : null;
}

// The list is the hottest tenant read: one prepared statement, no explicit transaction (see
// app_org_projects in the migration): the context, the membership and the page in one round trip.
const LIST_AS_MEMBER = prepared('projects.list_as_member', 'select * from app_org_projects($1, $2, $3, $4)');

/** The caller's role in the organisation and a page of its projects, newest first; null for a non-member. */
export async function listAsMember(
  db: Db,
  userId: string,
  orgId: string,
  page: { limit: number; beforeId?: string },
): Promise<{ role: Role; orgDeletedAt: Date | null; projects: ProjectRow[] } | null> {
  const rows = await runPrepared<ProjectPageRecord>(db, LIST_AS_MEMBER, [userId, orgId, page.beforeId ?? null, page.limit]);
  const [first] = rows;
  if (!first) return null;
  return { role: first.member_role, orgDeletedAt: first.org_deleted_at, projects: rows.filter((r) => r.id !== null).map(toProject) };
}

/** 'name_taken' when another project of the organisation has the name (case-insensitive). */
export async function insert(db: Db, p: ProjectRow): Promise<'ok' | 'name_taken'> {
  // Without RETURNING, knex's pg client answers the driver's result (knex's types say number[]).
  const result = (await db('projects')
    .insert({ id: p.id, org_id: p.orgId, name: p.name, description: p.description, created_by: p.createdBy, created_at: p.createdAt, updated_at: p.updatedAt })
    .onConflict(db.raw('(org_id, lower(name))'))
    .ignore()) as unknown as Pick<QueryResult, 'rowCount'>;
  return result.rowCount === 1 ? 'ok' : 'name_taken';
}

export async function update(db: Db, orgId: string, id: string, change: { name?: string; description?: string | null; now: Date }): Promise<'ok' | 'name_taken'> {
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

export async function remove(db: Db, orgId: string, id: string): Promise<void> {
  await db('projects').where({ org_id: orgId, id }).delete();
}
