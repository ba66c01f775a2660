// Seeds the ops benchmark with set-based SQL on the owner's (superuser's) connection:
//
//   - `auditEvents` audit events (default 10,000,000) over the 365 days before now, in time order
//     (as they are written), with ids that sort like the service's (aud_ + 26 characters);
//     ACTIONS.length actions, the first ones far more frequent (auth.login.succeeded ≈ 23%, the
//     rarest ≈ 1%); 200,000 users as actors (a few very active, most with a few hundred events;
//     30% of failed sign-ins anonymous); organisation actions (about 40%) in 20,000 organisations;
//     targets: sessions (one per sign-in), projects, settings, or users; ip, user agent, request id
//     and small data as the service writes them.
//   - `jobRuns` job runs (default 1,000,000) over the last 30 days: 90% completed, 4% discarded,
//     2% retryable, 2% available, 1% cancelled, 1% scheduled, in four kinds on three queues,
//     failed attempts recorded in `errors`. Plain INSERT statements, so that the row triggers of
//     job_runs (the overview's counters) see every row.
//
// The secondary indexes of audit_events are dropped for the load and created again from their
// own definitions (pg_get_indexdef) afterwards: the end state is the shipped schema. Then
// VACUUM (ANALYZE), as autovacuum would do in time on a table that only grows.
import type { Knex } from 'knex';

const ACTIONS = [
  'auth.login.succeeded',
  'auth.login.failed',
  'auth.logout',
  'auth.session.revoked',
  'project.updated',
  'org.member.role_changed',
  'auth.registered',
  'auth.email.verification_sent',
  'auth.email.verified',
  'project.created',
  'org.invitation.created',
  'org.invitation.accepted',
  'auth.password.reset_requested',
  'auth.password.reset',
  'auth.password.changed',
  'auth.login.mfa_required',
  'mfa.totp.enabled',
  'passkey.added',
  'org.created',
  'org.renamed',
  'project.deleted',
  'org.member.removed',
  'org.member.left',
  'org.invitation.revoked',
  'org.invitation.resent',
  'auth.logout_all',
  'passkey.renamed',
  'passkey.removed',
  'mfa.totp.disabled',
  'mfa.recovery_codes.regenerated',
  'auth.mfa.recovery_code_used',
  'auth.step_up.failed',
  'auth.code.attempts_capped',
  'org.deleted',
  'org.restored',
  'auth.account.deleted',
  'ops.setting.updated',
  'ops.job_run.retried',
  'ops.job.run_requested',
  'ops.mail.test_sent',
] as const;

const USERS = 200_000;
const ORGS = 20_000;
const PROJECTS = 100_000;
const KINDS = ['service.mail.send', 'service.auth.password_reset', 'service.retention.enforce', 'service.report.build'];
const QUEUE_OF: Record<string, string> = {
  'service.mail.send': 'mail',
  'service.auth.password_reset': 'mail',
  'service.retention.enforce': 'maintenance',
  'service.report.build': 'default',
};

/** `prefix_` + 26 hex digits of `n` (a SQL expression): the service's id shape, in the order of n. */
export const idSql = (prefix: string, n: string) => `'${prefix}_' || lpad(to_hex(${n}), 26, '0')`;

export interface SeedShape {
  auditEvents: number;
  jobRuns: number;
}

export interface Seeded {
  seconds: { auditEvents: number; auditIndexes: number; jobRuns: number; vacuumAnalyze: number; total: number };
  tables: { name: string; rows: number; bytes: number }[];
  /** Filter values of the measured lists: each names a few hundred to a few thousand events. */
  filters: { actorId: string; orgId: string; targetId: string };
}

export async function seed(owner: Knex, shape: SeedShape): Promise<Seeded> {
  const timings = { auditEvents: 0, auditIndexes: 0, jobRuns: 0, vacuumAnalyze: 0, total: 0 };
  const started = performance.now();
  const timed = async (key: keyof typeof timings, sql: string) => {
    const t0 = performance.now();
    await owner.raw(sql);
    timings[key] += (performance.now() - t0) / 1000;
  };
  // One connection (the pool of `owner` has max 1): these settings hold for every statement below.
  await owner.raw("set synchronous_commit = off; set maintenance_work_mem = '1GB'; set work_mem = '64MB'; set max_parallel_maintenance_workers = 2");

  const { rows: indexes } = await owner.raw<{ rows: { name: string; def: string }[] }>(
    `select c.relname as name, pg_get_indexdef(i.indexrelid) as def from pg_index i join pg_class c on c.oid = i.indexrelid
     where i.indrelid = 'audit_events'::regclass and not i.indisprimary order by c.relname`,
  );
  for (const index of indexes) await owner.raw(`drop index ${index.name}`);

  const n = shape.auditEvents;
  const actions = `array[${ACTIONS.map((a) => `'${a}'`).join(', ')}]`;
  const user = (expr: string) => idSql('usr', expr);
  await timed(
    'auditEvents',
    `insert into audit_events (id, at, action, actor_kind, actor_id, target_kind, target_id, org_id, ip, user_agent, request_id, data)
     select ${idSql('aud', 's.n')}, s.at, s.action,
            case when s.action like 'ops.%' then 'operator' else 'user' end,
            case when s.action = 'auth.login.failed' and s.r4 < 0.3 then null else ${user('1 + floor(pow(s.r1, 3) * ' + USERS + ')::int')} end,
            case when s.action like 'auth.login.%' or s.action in ('auth.logout', 'auth.session.revoked') then 'session'
                 when s.action like 'project.%' then 'project'
                 when s.action like 'ops.%' then 'setting'
                 else 'user' end,
            case when s.action like 'auth.login.%' or s.action in ('auth.logout', 'auth.session.revoked') then ${idSql('ses', 's.n')}
                 when s.action like 'project.%' then ${idSql('prj', `1 + floor(pow(s.r3, 2) * ${PROJECTS})::int`)}
                 when s.action like 'ops.%' then (array['maintenance_mode', 'auth.registration_enabled', 'auth.password_min_length'])[1 + s.n % 3]
                 else ${user(`1 + floor(pow(s.r3, 3) * ${USERS})::int`)} end,
            case when s.action like 'org.%' or s.action like 'project.%' then ${idSql('org', `1 + floor(pow(s.r2, 2) * ${ORGS})::int`)} end,
            '10.' || (s.n % 250) || '.' || (s.n / 250 % 250) || '.' || (s.n / 62500 % 250),
            (array['Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
                   'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
                   'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
                   'curl/8.5.0'])[1 + s.n % 4],
            ${idSql('req', 's.n::bigint * 7919')},
            case when s.action like 'auth.login.%' then jsonb_build_object('method', 'password')
                 when s.action = 'org.member.role_changed' then '{"role_before": "member", "role_after": "admin"}'::jsonb
                 else '{}'::jsonb end
     from (
       select g as n,
              now() - interval '365 days' + (g::float8 / ${n}) * interval '365 days' as at,
              (${actions})[1 + floor(pow(random(), 2.5) * ${ACTIONS.length})::int] as action,
              random() as r1, random() as r2, random() as r3, random() as r4
       from generate_series(1, ${n}) g
     ) s`,
  );
  for (const index of indexes) await timed('auditIndexes', index.def);

  const kinds = `array[${KINDS.map((k) => `'${k}'`).join(', ')}]`;
  const queues = `case s.kind ${Object.entries(QUEUE_OF).map(([k, q]) => `when '${k}' then '${q}'`).join(' ')} end`;
  const failed = "s.state in ('discarded', 'retryable')";
  await timed(
    'jobRuns',
    `insert into job_runs (kind, queue, priority, state, attempt, max_attempts, timeout_ms, payload, errors, created_at, scheduled_at, attempted_at, finalized_at, handed_over_at, actor_kind, actor_id)
     select s.kind, ${queues}, 0, s.state,
            case when s.state in ('available', 'scheduled') then 0 when ${failed} then 2 else 1 end, 3, 60000,
            jsonb_build_object('n', s.n),
            case when ${failed} then jsonb_build_array(
                   jsonb_build_object('at', s.created + interval '1 second', 'attempt', 1, 'message', 'connect ECONNREFUSED 10.0.0.5:587'),
                   jsonb_build_object('at', s.created + interval '31 seconds', 'attempt', 2, 'message', 'connect ECONNREFUSED 10.0.0.5:587'))
                 else '[]'::jsonb end,
            s.created,
            case when s.state = 'scheduled' then now() + interval '1 hour' when s.state = 'retryable' then now() + interval '5 minutes' else s.created end,
            case when s.state in ('available', 'scheduled') then null when ${failed} then s.created + interval '31 seconds' else s.created + interval '1 second' end,
            case when s.state in ('completed', 'discarded', 'cancelled') then s.created + interval '32 seconds' end,
            s.created, 'system', s.kind
     from (
       select a.*, case when a.r < 0.90 then 'completed' when a.r < 0.94 then 'discarded' when a.r < 0.96 then 'retryable'
                        when a.r < 0.98 then 'available' when a.r < 0.99 then 'cancelled' else 'scheduled' end as state
       from (
         select g as n, now() - interval '30 days' + (g::float8 / ${shape.jobRuns}) * interval '30 days' as created,
                (${kinds})[1 + floor(pow(random(), 1.5) * ${KINDS.length})::int] as kind, random() as r
         from generate_series(1, ${shape.jobRuns}) g
       ) a
     ) s`,
  );
  await timed('vacuumAnalyze', 'vacuum (analyze) audit_events, job_runs');
  timings.total = (performance.now() - started) / 1000;

  const { rows: tables } = await owner.raw<{ rows: { name: string; rows: number; bytes: number }[] }>(
    `select t.name, t.rows, pg_total_relation_size(t.name) as bytes
     from (select 'audit_events' as name, (select count(*) from audit_events) as rows
           union all select 'job_runs', (select count(*) from job_runs)) t`,
  );

  // Filter values with a typical number of events (the one closest to 500 in a range of ids
  // where such values are): a user as actor, an organisation, a user as target.
  const pick = async (sql: string) => (await owner.raw(sql)).rows[0]?.v as string;
  const typical = (column: string, where: string) =>
    pick(`select ${column} as v from (select ${column}, count(*) as c from audit_events where ${where} group by 1) x order by abs(c - 500), ${column} limit 1`);
  return {
    seconds: timings,
    tables: tables.map((t) => ({ name: t.name, rows: Number(t.rows), bytes: Number(t.bytes) })),
    filters: {
      actorId: await typical('actor_id', `actor_id between ${user('1000')} and ${user('1100')}`),
      orgId: await typical('org_id', `org_id between ${idSql('org', '500')} and ${idSql('org', '600')}`),
      targetId: await typical('target_id', `target_id between ${user('200')} and ${user('400')}`),
    },
  };
}
