// Organisation fixtures for tests: a pool that bypasses row-level security (the test database's
// owner: fixtures and checks only, never what the service uses), and members added directly.
import type { TestApp } from './test-app';
import { signedInUser } from './users';
import { createDatabase, type Db } from '../../src/platform/database';
import type { Role } from '../../src/orgs/policy';

export const ownerDatabase = (t: TestApp): Db => createDatabase(t.ctx.config.databaseUrl!, 1);

/** A new verified user made a member with `role` (as an accepted invitation would), member_count kept in step. */
export async function addMember(t: TestApp, owner: Db, orgId: string, role: Role) {
  const user = await signedInUser(t.ctx, { verified: true });
  await owner('memberships').insert({ org_id: orgId, user_id: user.userId, role, created_at: new Date() });
  await owner('organisations').where({ id: orgId }).increment('member_count', 1);
  return user;
}
