// Seeds the organisations benchmark with set-based SQL on the owner's (superuser's) connection:
//
//   - ORGS organisations (default 10,000) with 100 projects each; the LARGE "largest" ones (every
//     ORGS/LARGE-th, default 10) have DEEP_PROJECTS (2,600) so that a list of 50 per page has a
//     page 50, and 50 members each;
//   - POOL users (default 2,000) who found the organisations in turn (each owns ORGS/POOL of them)
//     and fill the largest ones (48 each, besides the owner);
//   - the bench user (made by the caller with insertUser, with a bearer session), a member of
//     every 10th organisation: 1,000 of them, the largest ones included.
//
// Ids have the service's format (`<prefix>_` + 26 characters of [0-9a-z], src/ids.ts): a fixed
// 10-character ULID time part taken at seeding, then 16 hex digits of a sequence number, so the
// ids of an organisation's projects sort by their creation (created_at follows the same number).
// member_count is recomputed from the memberships at the end, as the service keeps it.
import type { Knex } from 'knex';
import { ulid } from '../../src/ids';

export interface SeedShape {
  orgs: number;
  projectsPerOrg: number;
  /** Every `largeEvery`-th organisation is one of the largest: DEEP_PROJECTS projects and 50 members. */
  largeEvery: number;
  deepProjects: number;
  membersOfLargest: number;
  pool: number;
  /** The bench user is a member of every `userEvery`-th organisation. */
  userEvery: number;
}

export const DEFAULT_SHAPE: SeedShape = {
  orgs: 10_000,
  projectsPerOrg: 100,
  largeEvery: 1_000,
  deepProjects: 2_600,
  membersOfLargest: 50,
  pool: 2_000,
  userEvery: 10,
};

export interface Seeded {
  /** The organisation the per-organisation endpoints are measured on: one of the largest. */
  orgId: string;
  orgProjects: number;
  orgMembers: number;
  orgs: number;
  projects: number;
  memberships: number;
  users: number;
  userOrgs: number;
  /** A pool user (a typical member: a handful of organisations) who is a member of `orgId` too. */
  typicalUserId: string;
  typicalUserOrgs: number;
  largest: number;
  seconds: { users: number; orgs: number; projects: number; memberships: number; vacuumAnalyze: number; total: number };
}

/** `prefix_` + time part + 16 hex digits of `n` (a SQL expression). */
const idSql = (prefix: string, time: string, n: string) => `'${prefix}_${time}' || lpad(to_hex(${n}), 16, '0')`;

export async function seed(owner: Knex, benchUserId: string, shape: SeedShape = DEFAULT_SHAPE): Promise<Seeded> {
  const s = shape;
  if (s.orgs % s.largeEvery !== 0 || s.orgs % s.userEvery !== 0 || s.largeEvery % s.userEvery !== 0) throw new Error('seed shape: the largest organisations must be among the bench user\'s');
  // Members of a largest organisation: owner + extra pool members + the bench user.
  const extra = s.membersOfLargest - 2;
  const STEP = 37; // pool users ((n - 1 + j*STEP) mod pool) + 1, j = 1..extra: distinct from each other and from the owner
  if (extra * STEP >= s.pool) throw new Error('seed shape: pool too small for the members of the largest organisations');

  const time = ulid().slice(0, 10);
  const org = (n: string) => idSql('org', time, n);
  const usr = (n: string) => idSql('usr', time, n);
  const ownerOf = (n: string) => `((${n} - 1) % ${s.pool}) + 1`;
  const isLarge = (n: string) => `(${n} % ${s.largeEvery} = 0)`;
  // Creation times: organisation n at base + n minutes; its k-th project at base + (n·10000 + k) ms.
  const base = `(now() - interval '30 days')`;

  const timings = { users: 0, orgs: 0, projects: 0, memberships: 0, vacuumAnalyze: 0, total: 0 };
  const started = performance.now();
  const timed = async (key: keyof typeof timings, sql: string) => {
    const t0 = performance.now();
    await owner.raw(sql);
    timings[key] += (performance.now() - t0) / 1000;
  };

  // One connection (the pool of `owner` has max 1): these settings hold for every statement below.
  await owner.raw("set synchronous_commit = off; set maintenance_work_mem = '256MB'; set work_mem = '64MB'");

  await timed(
    'users',
    `insert into users (id, email, name, email_verified_at, created_at, updated_at)
     select ${usr('n')}, 'bench-pool-' || n || '@example.com', 'Pool user ' || n, now(), now(), now()
     from generate_series(1, ${s.pool}) n`,
  );
  await timed(
    'orgs',
    `insert into organisations (id, name, slug, created_by, member_count, created_at, updated_at)
     select ${org('n')}, 'Bench org ' || n, 'bench-org-' || n, ${usr(ownerOf('n'))}, 0,
            ${base} + n * interval '1 minute', ${base} + n * interval '1 minute'
     from generate_series(1, ${s.orgs}) n`,
  );
  await timed(
    'projects',
    `insert into projects (id, org_id, name, description, created_by, created_at, updated_at)
     select ${idSql('prj', time, 'n::bigint * 10000 + k')}, ${org('n')}, 'Project ' || k,
            case when k % 3 = 0 then null else 'Bench project ' || k || ' of organisation ' || n end,
            ${usr(ownerOf('n'))},
            ${base} + (n::bigint * 10000 + k) * interval '1 millisecond', ${base} + (n::bigint * 10000 + k) * interval '1 millisecond'
     from generate_series(1, ${s.orgs}) n,
          lateral generate_series(1, case when ${isLarge('n')} then ${s.deepProjects} else ${s.projectsPerOrg} end) k`,
  );
  await timed(
    'memberships',
    `insert into memberships (org_id, user_id, role, created_at)
     select ${org('n')}, ${usr(ownerOf('n'))}, 'owner', ${base} + n * interval '1 minute'
     from generate_series(1, ${s.orgs}) n
     union all
     select ${org('n')}, ${usr(`((n - 1 + j * ${STEP}) % ${s.pool}) + 1`)}, case when j <= 2 then 'admin' else 'member' end,
            ${base} + n * interval '1 minute' + j * interval '1 second'
     from generate_series(${s.largeEvery}, ${s.orgs}, ${s.largeEvery}) n, generate_series(1, ${extra}) j
     union all
     select ${org('n')}, '${benchUserId}', 'member', ${base} + n * interval '1 minute' + interval '1 hour'
     from generate_series(${s.userEvery}, ${s.orgs}, ${s.userEvery}) n`,
  );
  await timed(
    'memberships',
    `update organisations o set member_count = c.n from (select org_id, count(*)::int as n from memberships group by org_id) c where o.id = c.org_id`,
  );
  await timed('vacuumAnalyze', 'vacuum (analyze) users, organisations, memberships, projects');
  timings.total = (performance.now() - started) / 1000;

  // The measured organisation: the middle one of the largest.
  const nOrg = s.largeEvery * Math.ceil(s.orgs / s.largeEvery / 2);
  const orgId = (await owner.raw(`select ${org(String(nOrg))} as id`)).rows[0].id as string;
  const counts = (
    await owner.raw(
      `select (select count(*) from organisations)::int as orgs, (select count(*) from projects)::int as projects,
              (select count(*) from memberships)::int as memberships, (select count(*) from users)::int as users,
              (select count(*) from memberships where user_id = ?)::int as user_orgs,
              (select count(*) from projects where org_id = ?)::int as org_projects,
              (select member_count from organisations where id = ?) as org_members,
              (select count(*) from organisations where member_count = ?)::int as largest`,
      [benchUserId, orgId, orgId, s.membersOfLargest],
    )
  ).rows[0];
  // A typical member of the measured organisation: its third extra member (role member).
  const typicalUserId = (await owner.raw(`select ${usr(`((${nOrg} - 1 + 3 * ${STEP}) % ${s.pool}) + 1`)} as id`)).rows[0].id as string;
  const typicalUserOrgs = Number((await owner.raw('select count(*) as n from memberships where user_id = ?', [typicalUserId])).rows[0].n);
  return {
    orgId,
    orgProjects: counts.org_projects,
    orgMembers: counts.org_members,
    orgs: counts.orgs,
    projects: counts.projects,
    memberships: counts.memberships,
    users: counts.users,
    userOrgs: counts.user_orgs,
    typicalUserId,
    typicalUserOrgs,
    largest: counts.largest,
    seconds: timings,
  };
}
