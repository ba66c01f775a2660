// SQL for organisations and memberships. Every statement names its organisation (or its user)
// itself; row-level security (the acting user set by Services.actingAs) is the second wall.
import type { Db } from '../platform/database';
import { prepared, runPrepared } from '../platform/prepared';
import { isUniqueViolation } from '../platform/database';
import type { Role } from './policy';

export interface OrgRow {
  id: string;
  name: string;
  slug: string;
  memberCount: number;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
}

export interface MemberRow {
  userId: string;
  email: string;
  name: string | null;
  role: Role;
  joinedAt: Date;
}

const ORG_COLUMNS = ['o.id', 'o.name', 'o.slug', 'o.member_count', 'o.created_at', 'o.updated_at', 'o.deleted_at'];

/** An organisations row as ORG_COLUMNS selects it (and app_enter_org and app_member_organisations answer it). */
type OrgRecord = {
  id: string;
  name: string;
  slug: string;
  member_count: number;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
};

/** An organisation with the user's role in it. */
type OrgRoleRecord = OrgRecord & { role: Role };

/** A membership as MEMBER_COLUMNS selects it (with the user's email and name). */
interface MemberRecord {
  user_id: string;
  email: string;
  name: string | null;
  role: Role;
  created_at: Date;
}

/**
 * An organisation with the user's role in it, in one object: every read of one comes with the
 * role (a list page maps 50 of them: no second object spread from the first to add it).
 */
const toOrg = (r: OrgRoleRecord): OrgRow & { role: Role } => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  memberCount: r.member_count,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  deletedAt: r.deleted_at,
  role: r.role,
});

const toMember = (r: MemberRecord): MemberRow => ({ userId: r.user_id, email: r.email, name: r.name, role: r.role, joinedAt: r.created_at });

const ENTER_ORG = prepared('orgs.enter', 'select * from app_enter_org($1, $2, $3)');

/**
 * The first statement of a transaction under /v1/orgs/{orgId}: sets the acting user and
 * organisation for row-level security and answers the organisation with the user's role (null for
 * a non-member), in one round trip. `lock`: FOR UPDATE of the organisation row.
 */
export async function enterOrg(trx: Db, userId: string, orgId: string, lock: boolean): Promise<(OrgRow & { role: Role }) | null> {
  const [row] = await runPrepared<OrgRoleRecord>(trx, ENTER_ORG, [userId, orgId, lock]);
  return row ? toOrg(row) : null;
}

/** The organisation with the user's role in it, or null when the user is not a member. */
export async function findMembership(db: Db, orgId: string, userId: string): Promise<{ org: OrgRow; role: Role } | null> {
  const row = await db('organisations as o')
    .join('memberships as m', (j) => j.on('m.org_id', 'o.id').andOnVal('m.user_id', userId))
    .where('o.id', orgId)
    .first([...ORG_COLUMNS, 'm.role']);
  return row ? { org: toOrg(row), role: row.role } : null;
}

export const MEMBER_ORGANISATIONS = prepared('orgs.member_organisations', 'select * from app_acting_member_organisations($1, $2, $3, $4)');

/**
 * A user's organisations, newest first; soft-deleted ones only when they own them and they were
 * deleted after `deletedSince`. One statement that also makes `userId` the acting user (as
 * Services.actingAs would, for the rest of the transaction when `db` is one): no explicit
 * transaction (see the migration member_organisations_in_one_statement).
 */
export async function listForUser(
  db: Db,
  userId: string,
  page: { limit: number; beforeId?: string; deletedSince: Date | null },
): Promise<(OrgRow & { role: Role })[]> {
  const rows = await runPrepared<OrgRoleRecord>(db, MEMBER_ORGANISATIONS, [userId, page.beforeId ?? null, page.deletedSince, page.limit]);
  return rows.map(toOrg);
}

/** False when the slug is taken (by any organisation, soft-deleted ones included). */
export async function insertOrg(db: Db, org: { id: string; name: string; slug: string; createdBy: string; now: Date }): Promise<boolean> {
  // No RETURNING and no ON CONFLICT: both need the new row to be visible, and the founder cannot
  // see it until their membership exists (row-level security). The unique index decides.
  try {
    await db('organisations').insert({ id: org.id, name: org.name, slug: org.slug, created_by: org.createdBy, member_count: 0, created_at: org.now, updated_at: org.now });
    return true;
  } catch (err) {
    if (isUniqueViolation(err, 'organisations_slug_key')) return false;
    throw err;
  }
}

/** Slugs in use among `base` and `base-<n>` (to pick a free suffix in one round trip). */
export async function slugsTaken(db: Db, base: string): Promise<Set<string>> {
  const { rows } = await db.raw<{ rows: { slug: string }[] }>('select s as slug from app_slugs_taken(?) as s', [base]);
  return new Set(rows.map((r) => r.slug));
}

/** Name and/or slug; 'slug_taken' when the new slug is used by another organisation. */
export async function updateOrg(db: Db, orgId: string, change: { name?: string; slug?: string; now: Date }): Promise<'ok' | 'slug_taken'> {
  try {
    await db('organisations')
      .where({ id: orgId })
      .update({ ...(change.name !== undefined && { name: change.name }), ...(change.slug !== undefined && { slug: change.slug }), updated_at: change.now });
    return 'ok';
  } catch (err) {
    if (isUniqueViolation(err, 'organisations_slug_key')) return 'slug_taken';
    throw err;
  }
}

export async function setDeletedAt(db: Db, orgId: string, deletedAt: Date | null, now: Date): Promise<void> {
  await db('organisations').where({ id: orgId }).update({ deleted_at: deletedAt, updated_at: now });
}

export async function addMembership(db: Db, m: { orgId: string; userId: string; role: Role; now: Date }): Promise<void> {
  await db('memberships').insert({ org_id: m.orgId, user_id: m.userId, role: m.role, created_at: m.now });
  await db('organisations').where({ id: m.orgId }).increment('member_count', 1);
}

/** Removes one membership; the organisation row must be locked by the caller (enterOrg with lock). */
export async function removeMembership(db: Db, orgId: string, userId: string): Promise<void> {
  await db('organisations').where({ id: orgId }).decrement('member_count', 1);
  await db('memberships').where({ org_id: orgId, user_id: userId }).delete();
}

export async function setRole(db: Db, orgId: string, userId: string, role: Role): Promise<void> {
  await db('memberships').where({ org_id: orgId, user_id: userId }).update({ role });
}

export async function countOwners(db: Db, orgId: string): Promise<number> {
  const row = await db('memberships').where({ org_id: orgId, role: 'owner' }).count<{ count: number }[]>({ count: '*' }).first();
  return Number(row?.count ?? 0);
}

const MEMBER_COLUMNS = ['m.user_id', 'u.email', 'u.name', 'm.role', 'm.created_at'];

export async function findMember(db: Db, orgId: string, userId: string): Promise<MemberRow | null> {
  const row = await db('memberships as m').join('users as u', 'u.id', 'm.user_id').where({ 'm.org_id': orgId, 'm.user_id': userId }).first(MEMBER_COLUMNS);
  return row ? toMember(row) : null;
}

/** Whether an account with this (lower-cased) address is a member. */
export async function isMemberByEmail(db: Db, orgId: string, email: string): Promise<boolean> {
  const row = await db('memberships as m').join('users as u', 'u.id', 'm.user_id').where({ 'm.org_id': orgId, 'u.email': email }).first('m.user_id');
  return row !== undefined;
}

/** Members, oldest membership first; `after` is the last row of the previous page. */
export async function listMembers(db: Db, orgId: string, page: { limit: number; after?: { joinedAt: string; userId: string } }): Promise<MemberRow[]> {
  const rows = await db('memberships as m')
    .join('users as u', 'u.id', 'm.user_id')
    .where('m.org_id', orgId)
    .modify((q) => {
      if (page.after) q.whereRaw('(m.created_at, m.user_id) > (?, ?)', [page.after.joinedAt, page.after.userId]);
    })
    .orderBy([{ column: 'm.created_at' }, { column: 'm.user_id' }])
    .limit(page.limit)
    .select(MEMBER_COLUMNS);
  return rows.map(toMember);
}

/**
 * An account about to be deleted: each of its memberships with the organisation locked (in id
 * order, so two deletions cannot deadlock) and the organisation's owner count.
 */
export async function lockMembershipsOf(db: Db, userId: string): Promise<{ orgId: string; role: Role; memberCount: number; owners: number; deleted: boolean }[]> {
  const { rows } = await db.raw<{ rows: { id: string; role: Role; member_count: number; deleted_at: Date | null; owners: number }[] }>(
    `select o.id, m.role, o.member_count, o.deleted_at,
            (select count(*) from memberships w where w.org_id = o.id and w.role = 'owner') as owners
     from memberships m join organisations o on o.id = m.org_id
     where m.user_id = ?
     order by o.id
     for update of o`,
    [userId],
  );
  return rows.map((r) => ({ orgId: r.id, role: r.role, memberCount: r.member_count, owners: Number(r.owners), deleted: r.deleted_at !== null }));
}

/**
 * The account's memberships go; organisations it was the only member of are soft-deleted (the
 * retention job purges them). The counts change before the memberships go: after that, row-level
 * security no longer shows the user those organisations.
 */
export async function removeAllMembershipsOf(db: Db, userId: string, orgIds: string[], now: Date): Promise<string[]> {
  if (!orgIds.length) return [];
  const orphaned = await db('organisations')
    .whereIn('id', orgIds)
    .update({ member_count: db.raw('member_count - 1'), deleted_at: db.raw('case when member_count = 1 and deleted_at is null then ?::timestamptz else deleted_at end', [now]) })
    .returning(['id', 'member_count']);
  await db('memberships').where({ user_id: userId }).delete();
  return orphaned.filter((r: { member_count: number }) => r.member_count === 0).map((r: { id: string }) => r.id);
}

/** Retention: one batch of rows of organisations soft-deleted before `cutoff` (see the migration). */
export async function purgeDeletedBatch(db: Db, cutoff: Date, batchSize: number): Promise<number> {
  const { rows } = await db.raw<{ rows: { removed: number }[] }>('select app_purge_deleted_organisations(?, ?) as removed', [cutoff, batchSize]);
  return rows[0]!.removed;
}
