// The second wall: requests run as a role that row-level security applies to, and the policies
// keep every tenant's rows away from everyone else, even from a query that forgets its filter.
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { createDatabase, type Db } from '../../src/platform/database';
import { Services } from '../../src/services';
import { createInvitation, createOrg, createProject, ownerDatabase } from '../support/orgs';
import { appDatabase, assertSubjectToPolicies, DatabaseRoleError, provisionAppRole } from '../../src/platform/database-roles';
import { hashToken } from '../../src/sessions/tokens';

let t: TestApp;
let owner: Db;
let a: { org: any; user: Awaited<ReturnType<typeof signedInUser>>; project: any };
let b: { org: any; user: Awaited<ReturnType<typeof signedInUser>>; project: any };

async function tenant(name: string) {
  const user = await signedInUser(t.ctx, { verified: true });
  const org = await createOrg(t, user, { name });
  const project = await createProject(t, user, org.id, { name: `${name} project` });
  await createInvitation(t, user, org.id, { email: `guest-${Date.now()}@example.com`, role: 'member' });
  return { user, org, project };
}

beforeAll(async () => {
  t = await startTestApp();
  owner = ownerDatabase(t);
  a = await tenant('Tenant A');
  b = await tenant('Tenant B');
});
afterAll(async () => {
  await owner.destroy();
  await t.close();
});

const TABLES = ['organisations', 'memberships', 'invitations', 'projects'];
const orgOf = (table: string, row: any) => (table === 'organisations' ? row.id : row.org_id);

it('requests connect as a role that is not a superuser, has no BYPASSRLS and owns no table; the owner is refused', async () => {
  const { rows } = await t.ctx.db.raw('select current_user as role, rolsuper, rolbypassrls from pg_roles where rolname = current_user');
  expect(rows[0]).toEqual({ role: 'tenant_api_app', rolsuper: false, rolbypassrls: false });
  await expect(assertSubjectToPolicies(t.ctx.db)).resolves.toBeUndefined();
  await expect(assertSubjectToPolicies(owner)).rejects.toBeInstanceOf(DatabaseRoleError);
  // Grants are kept current at every start, by several instances at once.
  await Promise.all([provisionAppRole(owner, t.ctx.config), provisionAppRole(owner, t.ctx.config)]);
  await expect(t.ctx.db.raw('select * from knex_migrations')).rejects.toThrow(/permission denied/);
});

it('without an acting user, no tenant row is visible', async () => {
  for (const table of TABLES) expect(await t.ctx.db(table).select()).toEqual([]);
});

it('a query that forgets its organisation filter returns nothing of another tenant', async () => {
  await t.ctx.services.actingAs({ userId: a.user.userId }, async (tx) => {
    for (const table of TABLES) {
      const rows = await tx.db(table).select();
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((r: any) => orgOf(table, r) === a.org.id)).toBe(true);
    }
    // Writes without a filter touch only the acting user's tenant too.
    expect(await tx.db('projects').update({ description: 'touched' })).toBe(1);
    expect(await tx.db('projects').where({ id: b.project.id }).delete()).toBe(0);
  });
  expect((await owner('projects').where({ id: b.project.id }).first()).description).toBeNull();
});

it('with an organisation in the path, a member of two organisations sees only that one', async () => {
  await owner('memberships').insert({ org_id: b.org.id, user_id: a.user.userId, role: 'member', created_at: new Date() });
  try {
    await t.ctx.services.actingAs({ userId: a.user.userId, orgId: b.org.id }, async (tx) => {
      for (const table of TABLES) {
        const rows = await tx.db(table).select();
        expect(rows.length).toBeGreaterThan(0);
        expect(rows.every((r: any) => orgOf(table, r) === b.org.id)).toBe(true);
      }
    });
  } finally {
    await owner('memberships').where({ org_id: b.org.id, user_id: a.user.userId }).delete();
  }
});

it('nobody can insert a membership into another organisation, as founder or with someone else’s invitation', async () => {
  const attempt = (who: { userId: string; orgId?: string; invitationId?: string }, role: string) =>
    t.ctx.services.actingAs(who, (tx) => tx.db('memberships').insert({ org_id: b.org.id, user_id: a.user.userId, role, created_at: new Date() }));
  await expect(attempt({ userId: a.user.userId }, 'owner')).rejects.toThrow(/row-level security/);
  const invitation = await owner('invitations').where({ org_id: b.org.id }).first();
  await expect(attempt({ userId: a.user.userId, orgId: b.org.id, invitationId: invitation.id }, 'member')).rejects.toThrow(/row-level security/);
  // Nor read an invitation by token unless holding the token.
  await t.ctx.services.actingAs({ userId: a.user.userId }, async (tx) => {
    const { rows } = await tx.db.raw('select * from app_invitation_by_token_hash(?)', [hashToken('not-the-token')]);
    expect(rows).toEqual([]);
  });
  expect(await owner('memberships').where({ org_id: b.org.id })).toHaveLength(1);
});

it('the list of a user’s organisations answers only the acting user', async () => {
  const list = (acting: string, of: string) =>
    t.ctx.services.actingAs({ userId: acting }, async (tx) => (await tx.db.raw('select id from app_member_organisations(?, null, null, 50)', [of])).rows);
  expect(await list(a.user.userId, a.user.userId)).toEqual([{ id: a.org.id }]);
  expect(await list(a.user.userId, b.user.userId)).toEqual([]);
  expect((await t.ctx.db.raw('select id from app_member_organisations(?, null, null, 50)', [b.user.userId])).rows).toEqual([]);
});

/**
 * Services over a pool of ONE connection as the application role: the statement after the
 * request is then sure to run on the connection the request used, so a context left behind
 * would show.
 */
async function withOneConnection(fn: (services: Services, db: Db) => Promise<void>): Promise<void> {
  const db = createDatabase(appDatabase(t.ctx.config, t.ctx.config.databaseUrl!), 1);
  try {
    await fn(new Services({ ...t.ctx, db }), db);
  } finally {
    await db.destroy();
  }
}

const leftContext = async (db: Db) =>
  (await db.raw("select nullif(current_setting('app.user_id', true), '') as u, nullif(current_setting('app.org_id', true), '') as o")).rows[0];

it('the one-statement project list sets its context for that statement only, and answers non-members nothing', async () => {
  await withOneConnection(async (_services, db) => {
    const page = (userId: string, orgId: string) => db.raw('select id, member_role from app_org_projects(?, ?, null, 50)', [userId, orgId]);
    expect((await page(a.user.userId, a.org.id)).rows).toEqual([{ id: a.project.id, member_role: 'owner' }]);
    expect(await leftContext(db)).toEqual({ u: null, o: null });
    expect((await page(b.user.userId, a.org.id)).rows).toEqual([]);
    expect(await db('projects').select()).toEqual([]);
  });
});

it('the one-statement list of organisations sets its context for that statement only, and lists only the acting user’s', async () => {
  await withOneConnection(async (_services, db) => {
    const list = (userId: string) => db.raw('select id, role from app_acting_member_organisations(?, null, null, 50)', [userId]);
    expect((await list(a.user.userId)).rows).toEqual([{ id: a.org.id, role: 'owner' }]);
    expect(await leftContext(db)).toEqual({ u: null, o: null });
    expect((await list(b.user.userId)).rows).toEqual([{ id: b.org.id, role: 'owner' }]);
    expect(await db('organisations').select()).toEqual([]);
  });
});

it('the acting user does not outlive its transaction on the pooled connection', async () => {
  await withOneConnection(async (services, db) => {
    await services.actingAs({ userId: a.user.userId, orgId: a.org.id }, async (tx) => {
      expect((await tx.db('projects').select()).length).toBe(1);
    });
    expect(await leftContext(db)).toEqual({ u: null, o: null });
    expect(await db('projects').select()).toEqual([]);
    // The same for operations under an organisation (their first statement sets the context).
    await services.projects.get({ userId: a.user.userId } as never, a.org.id, a.project.id);
    expect(await leftContext(db)).toEqual({ u: null, o: null });
  });
});
