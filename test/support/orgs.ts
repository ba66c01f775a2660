// Organisation fixtures for tests: organisations, projects and invitations made through the typed
// client (api-client.ts, every answer checked against the contract) by a signed-in user; a pool that
// bypasses row-level security (the test database's owner: fixtures and checks only, never what the
// service uses), and members added directly (an accepted invitation needs the mailed token).
import type { components } from '../../codegen/api-types';
import type { TestApp } from './test-app';
import { signedInUser } from './users';
import { authorization, expectStatus } from './api-client';
import { createDatabase, type Db } from '../../src/platform/database';
import type { Role } from '../../src/orgs/policy';

type Schemas = components['schemas'];
export type Org = Schemas['Org'];
export type Project = Schemas['Project'];
export type Invitation = Schemas['Invitation'];
/** Whoever acts: a signed-in user's `auth` ("Bearer …"), or that header's value. */
type Caller = { auth: string } | string;

export const ownerDatabase = (t: TestApp): Db => createDatabase(t.ctx.config.databaseUrl!, 1);

/** A new verified user made a member with `role` (as an accepted invitation would), member_count kept in step. */
export async function addMember(t: TestApp, owner: Db, orgId: string, role: Role) {
  const user = await signedInUser(t.ctx, { verified: true });
  await owner('memberships').insert({ org_id: orgId, user_id: user.userId, role, created_at: new Date() });
  await owner('organisations').where({ id: orgId }).increment('member_count', 1);
  return user;
}

/** POST /v1/orgs as `owner` (verified) → 201: the Org, `owner` its owner. `slug` only when given. */
export async function createOrg(t: TestApp, owner: Caller, opts: { name?: string; slug?: string } = {}): Promise<Org> {
  const name = opts.name ?? 'Acme Labs';
  return expectStatus(t.api.POST('/v1/orgs', { headers: authorization(owner), body: opts.slug ? { name, slug: opts.slug } : { name } }), 201);
}

/** A new verified user (users.ts `signedInUser`) and the organisation they created. */
export async function orgWithOwner(t: TestApp, opts: { name?: string } = {}) {
  const owner = await signedInUser(t.ctx, { verified: true });
  const org = await createOrg(t, owner, opts);
  return { owner, org };
}

/** An organisation created by `founder` (its owner) with one more member, `user`, of `role` (added directly with `db`). */
export async function orgWith(t: TestApp, db: Db, role: Role, opts: { name?: string } = {}) {
  const { owner: founder, org } = await orgWithOwner(t, opts);
  const user = await addMember(t, db, org.id, role);
  return { org, founder, user };
}

/** POST /v1/orgs/{orgId}/projects as `who` → 201: the Project. */
export async function createProject(t: TestApp, who: Caller, orgId: string, body: Schemas['ProjectCreateRequest']): Promise<Project> {
  return expectStatus(t.api.POST('/v1/orgs/{orgId}/projects', { headers: authorization(who), params: { path: { orgId } }, body }), 201);
}

/** POST /v1/orgs/{orgId}/invitations as `who` → 201: the Invitation (its token is only mailed). */
export async function createInvitation(t: TestApp, who: Caller, orgId: string, body: Schemas['InvitationCreateRequest']): Promise<Invitation> {
  return expectStatus(t.api.POST('/v1/orgs/{orgId}/invitations', { headers: authorization(who), params: { path: { orgId } }, body }), 201);
}

/** DELETE /v1/orgs/{orgId} as its owner → 200: soft-deleted (restorable for 30 days). */
export async function deleteOrg(t: TestApp, owner: Caller, orgId: string): Promise<Org> {
  return expectStatus(t.api.DELETE('/v1/orgs/{orgId}', { headers: authorization(owner), params: { path: { orgId } } }), 200);
}
