// The role matrix, swept over the contract: for every operation under /v1/orgs/{orgId} (read from
// openapi.yaml) and every caller (owner, admin, member, non-member), on a fresh organisation of
// its own, the allowed roles succeed (or get the domain error that is the right answer, such as
// 409 `not_deleted` for restoring a live organisation), the other roles get 403 `forbidden` and
// non-members 404 `not_found`.
//
// The expectations are written out by hand below from the contract (the `Role` schema: "owner:
// everything, including deleting and restoring the organisation and granting owner. admin:
// rename, invite, resend and revoke invitations, remove or re-role non-owners, delete projects.
// member: read the organisation, its members and projects; create and update projects", and each
// operation's description), NOT from src/orgs/policy.ts: the policy module is only cross-checked
// against them, so that a mistake in it shows.
//
// Besides status codes, each case checks the database (owner connection, row-level security does
// not filter it): a refused call (403, 404, 409) changes nothing; a successful write changes the
// organisation's rows; a read changes nothing.
//
// Fixture of each case: an organisation founded by `owner` through the API, with `admin`,
// `member`, a plain member `target` (whom member operations act on) and, unless the scenario says
// "sole owner", a second owner `co-owner`; one project and one open invitation. Every case gets a
// fresh one, so destructive calls (delete, leave, remove…) cannot disturb the next.
import type { Knex } from 'knex';
import { startTestApp, type TestApp } from '../../support/test-app';
import { can, ROLES, type OrgAction, type Role } from '../../../src/orgs/policy';
import {
  buildOrg,
  call,
  fillPath,
  freshBody,
  orgScopedOperations,
  outcome,
  ownerDb,
  snapshot,
  softDeleteOrg,
  tag,
  verifiedUser,
  type IdKind,
  type Operation,
  type OrgFixture,
  type User,
} from './fixture';

type Actor = Role | 'non-member';
const ACTORS: Actor[] = ['owner', 'admin', 'member', 'non-member'];

interface Expect {
  status: number;
  code?: string;
}
const ok = (status: number): Expect => ({ status });
const FORBIDDEN: Expect = { status: 403, code: 'forbidden' };
const NOT_FOUND: Expect = { status: 404, code: 'not_found' };
const LAST_OWNER: Expect = { status: 409, code: 'last_owner' };

const EVERYONE: Role[] = ['owner', 'admin', 'member'];
const MANAGERS: Role[] = ['owner', 'admin'];
const OWNERS: Role[] = ['owner'];

/**
 * The contract's matrix, by hand: who may call each operation on a live organisation, and the
 * answer they get in the standard fixture (a plain member as target). `action` is the policy
 * action the service asks for, used only for the cross-check with `can()`.
 */
const CONTRACT_MATRIX: Record<string, { allowed: Role[]; answer: Expect; action: OrgAction }> = {
  getOrg: { allowed: EVERYONE, answer: ok(200), action: 'org.read' },
  updateOrg: { allowed: MANAGERS, answer: ok(200), action: 'org.update' },
  deleteOrg: { allowed: OWNERS, answer: ok(200), action: 'org.delete' },
  // Live organisation: the owner may restore but there is nothing to (the success path is in the
  // soft-deleted sweep below); admins and members get 403 (restoreOrg's description).
  restoreOrg: { allowed: OWNERS, answer: { status: 409, code: 'not_deleted' }, action: 'org.restore' },
  // With a co-owner in the fixture the owner may leave too (the sole owner: a variant below).
  leaveOrg: { allowed: EVERYONE, answer: ok(204), action: 'org.leave' },
  listMembers: { allowed: EVERYONE, answer: ok(200), action: 'members.read' },
  // Target: the plain member, made admin (admins may move non-owners between admin and member).
  updateMemberRole: { allowed: MANAGERS, answer: ok(200), action: 'members.change_role' },
  removeMember: { allowed: MANAGERS, answer: ok(204), action: 'members.remove' },
  listInvitations: { allowed: MANAGERS, answer: ok(200), action: 'invitations.read' },
  createInvitation: { allowed: MANAGERS, answer: ok(201), action: 'invitations.manage' },
  revokeInvitation: { allowed: MANAGERS, answer: ok(204), action: 'invitations.manage' },
  resendInvitation: { allowed: MANAGERS, answer: ok(200), action: 'invitations.manage' },
  listProjects: { allowed: EVERYONE, answer: ok(200), action: 'projects.read' },
  createProject: { allowed: EVERYONE, answer: ok(201), action: 'projects.create' },
  getProject: { allowed: EVERYONE, answer: ok(200), action: 'projects.read' },
  updateProject: { allowed: EVERYONE, answer: ok(200), action: 'projects.update' },
  deleteProject: { allowed: MANAGERS, answer: ok(204), action: 'projects.delete' },
};

/** Whom `{userId}` names. */
type Target = 'plain member' | 'co-owner' | 'owner';

interface Scenario {
  operationId: string;
  /** Shown in the title. */
  variant: string;
  soleOwner?: boolean;
  deleted?: boolean;
  target?: Target;
  /** The role sent to updateMemberRole. */
  role?: Role;
  expect: Record<Role, Expect>;
}

const byRole = (f: (role: Role) => Expect) => Object.fromEntries(EVERYONE.map((r) => [r, f(r)])) as Record<Role, Expect>;

const OPERATIONS = orgScopedOperations();

/** Every operation on a live organisation, as the matrix says. */
const LIVE: Scenario[] = OPERATIONS.filter((op) => CONTRACT_MATRIX[op.operationId]).map((op) => {
  const row = CONTRACT_MATRIX[op.operationId]!;
  return {
    operationId: op.operationId,
    variant: 'live org',
    role: op.operationId === 'updateMemberRole' ? 'admin' : undefined,
    expect: byRole((r) => (row.allowed.includes(r) ? row.answer : FORBIDDEN)),
  };
});

/** The finer rules of the contract about owners (updateMemberRole, removeMember, leaveOrg descriptions). */
const OWNER_RULES: Scenario[] = [
  // "The only owner cannot leave (409 last_owner)"; admins and members leave as usual.
  { operationId: 'leaveOrg', variant: 'sole owner', soleOwner: true, expect: { owner: LAST_OWNER, admin: ok(204), member: ok(204) } },
  // "Owners may change anyone's role, including … other owners'"; admins may not touch an owner.
  { operationId: 'updateMemberRole', variant: 'co-owner → member', target: 'co-owner', role: 'member', expect: { owner: ok(200), admin: FORBIDDEN, member: FORBIDDEN } },
  // "… and are the only ones who may grant owner".
  { operationId: 'updateMemberRole', variant: 'plain member → owner', role: 'owner', expect: { owner: ok(200), admin: FORBIDDEN, member: FORBIDDEN } },
  // "Demoting the only owner answers 409 last_owner" (here the owner demotes themself).
  { operationId: 'updateMemberRole', variant: 'sole owner → admin', soleOwner: true, target: 'owner', role: 'admin', expect: { owner: LAST_OWNER, admin: FORBIDDEN, member: FORBIDDEN } },
  // "Owners may remove anyone; admins may remove admins and members but not owners (403)".
  { operationId: 'removeMember', variant: 'co-owner', target: 'co-owner', expect: { owner: ok(204), admin: FORBIDDEN, member: FORBIDDEN } },
  // "Removing the only owner answers 409 last_owner" (removing oneself is leaving).
  { operationId: 'removeMember', variant: 'sole owner', soleOwner: true, target: 'owner', expect: { owner: LAST_OWNER, admin: FORBIDDEN, member: FORBIDDEN } },
];

/**
 * A soft-deleted organisation (deleteOrg's description): "its members, invitations and projects
 * answer 404 to everyone, except that owners can still read it with GET /v1/orgs/{orgId} and
 * restore it". So admins and members get 404 even where a live organisation would answer them
 * 403 (restoreOrg's "admins and members get 403" is about a live organisation: the deleted one
 * no longer exists for them).
 */
const DELETED: Scenario[] = OPERATIONS.map((op) => ({
  operationId: op.operationId,
  variant: 'soft-deleted org',
  deleted: true,
  role: op.operationId === 'updateMemberRole' ? 'admin' : undefined,
  expect: byRole((r) => (r === 'owner' && (op.operationId === 'getOrg' || op.operationId === 'restoreOrg') ? ok(200) : NOT_FOUND)),
}));

interface RoleCase {
  title: string;
  scenario: Scenario;
  actor: Actor;
  expect: Expect;
}

const describeExpect = (e: Expect) => `${e.status}${e.code ? ` ${e.code}` : ''}`;

const CASES: RoleCase[] = [...LIVE, ...OWNER_RULES, ...DELETED].flatMap((scenario) =>
  ACTORS.map((actor) => {
    const expect = actor === 'non-member' ? NOT_FOUND : scenario.expect[actor];
    return { title: `${scenario.operationId} [${scenario.variant}] as ${actor} → ${describeExpect(expect)}`, scenario, actor, expect };
  }),
);

let t: TestApp;
let db: Knex;
let users: Record<'owner' | 'admin' | 'member' | 'target' | 'coOwner' | 'outsider', User>;

beforeAll(async () => {
  // Several hundred requests from one client IP: lift the per-IP ceiling (tested in test/http).
  t = await startTestApp({ RATE_LIMIT_IP_PER_MINUTE: '1000000' });
  db = ownerDb(t);
  // The same users in every case's organisation: only the organisation is fresh each time.
  users = {
    owner: await verifiedUser(t),
    admin: await verifiedUser(t),
    member: await verifiedUser(t),
    target: await verifiedUser(t),
    coOwner: await verifiedUser(t),
    outsider: await verifiedUser(t),
  };
});

afterAll(async () => {
  await db?.destroy();
  await t?.close();
});

async function freshOrg(scenario: Scenario): Promise<OrgFixture> {
  const members: { user: User; role: Role }[] = [
    { user: users.admin, role: 'admin' },
    { user: users.member, role: 'member' },
    { user: users.target, role: 'member' },
    ...(scenario.soleOwner ? [] : [{ user: users.coOwner, role: 'owner' as const }]),
  ];
  const org = await buildOrg(t, db, { owner: users.owner, name: `Role sweep ${tag()}`, members });
  if (scenario.deleted) await softDeleteOrg(t, users.owner, org.orgId);
  return org;
}

function urlFor(op: Operation, org: OrgFixture, target: Target): string {
  const targetId = { 'plain member': users.target.userId, 'co-owner': users.coOwner.userId, owner: users.owner.userId }[target];
  const byKind: Record<IdKind, string> = { org: org.orgId, project: org.projectId, member: targetId, invitation: org.invitationId };
  return fillPath(op.path, Object.fromEntries(op.params.map((p) => [p.name, byKind[p.kind]])));
}

test('every operation under /v1/orgs/{orgId} has a row in the contract matrix, and every row an operation', () => {
  const ids = OPERATIONS.map((op) => op.operationId).sort();
  expect(ids.length).toBeGreaterThanOrEqual(17);
  expect(Object.keys(CONTRACT_MATRIX).sort()).toEqual(ids);
});

// Cross-check only: the expectations above come from the contract, not from the policy module.
test.each(Object.entries(CONTRACT_MATRIX))('policy.can agrees with the contract for %s', (_operationId, row) => {
  expect(ROLES.filter((role) => can(role, row.action))).toEqual(row.allowed);
});

test.each(CASES)('$title', async ({ scenario, actor, expect: expected }) => {
  const op = OPERATIONS.find((o) => o.operationId === scenario.operationId)!;
  const org = await freshOrg(scenario);
  const url = urlFor(op, org, scenario.target ?? 'plain member');
  const body = freshBody(op);
  if (body && scenario.role) body.role = scenario.role;
  const as = actor === 'non-member' ? users.outsider : users[actor];

  const before = await snapshot(db, [org.orgId]);
  const res = await call(t, op.method, url, as.auth, body);
  expect(outcome(res)).toEqual(expected);

  const after = await snapshot(db, [org.orgId]);
  // A successful write shows in the organisation's rows; a read or a refusal leaves them alone.
  if (res.status < 300 && op.method !== 'get') expect(after).not.toEqual(before);
  else expect(after).toEqual(before);
});
