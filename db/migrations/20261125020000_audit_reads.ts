// Reading the audit log (GET /ops/audit, /ops/audit/stats):
// - every list filter has an index in the list's order (at desc, id desc), so a page is one short
//   index range scan whatever the filter. actor_id, target_id and org_id are null on many events
//   (sign-ins have no organisation): their indexes leave those out.
// - action compares byte-wise (collation "C"): actions are ASCII identifiers, and an `auth.login.*`
//   prefix becomes an index range ['auth.login.', 'auth.login/'), which linguistic collations
//   (that skip punctuation when sorting) would not keep contiguous.
// - counting events per action and day over weeks would read hundreds of thousands of rows per
//   request, so closed hours and days are counted once into rollups (src/audit/rollups.ts); no
//   trigger on audit_events, whose inserts must not queue on a shared counter row.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  for (const column of ['action', 'actor', 'target', 'org']) await knex.raw(`drop index if exists audit_events_${column}_idx`);
  await knex.raw('alter table audit_events alter column action type text collate "C"');
  await knex.raw('create index audit_events_action_idx on audit_events (action, at desc, id desc)');
  await knex.raw('create index audit_events_actor_idx on audit_events (actor_id, at desc, id desc) where actor_id is not null');
  await knex.raw('create index audit_events_target_idx on audit_events (target_id, at desc, id desc) where target_id is not null');
  await knex.raw('create index audit_events_org_idx on audit_events (org_id, at desc, id desc) where org_id is not null');

  // A bucket row says its span (an hour, or a UTC day) was counted; one without events has no
  // count rows. No foreign key from counts to buckets: its check doubled the cost of filling them.
  await knex.raw(`
    create table audit_rollup_buckets (
      span text not null check (span in ('hour', 'day')),
      start timestamptz not null,
      primary key (span, start)
    );
    create table audit_rollup_counts (
      span text not null,
      start timestamptz not null,
      action text collate "C" not null,
      count integer not null,
      primary key (span, start, action) include (count)
    );
    -- Retention deleted the events before pruned_before: buckets that start earlier are void.
    create table audit_rollup_horizon (
      singleton boolean primary key default true check (singleton),
      pruned_before timestamptz not null
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table audit_rollup_horizon, audit_rollup_counts, audit_rollup_buckets');
  for (const column of ['action', 'actor', 'target', 'org']) await knex.raw(`drop index audit_events_${column}_idx`);
  await knex.raw('alter table audit_events alter column action type text collate "default"');
  await knex.raw('create index audit_events_action_idx on audit_events (action, at desc)');
  await knex.raw('create index audit_events_actor_idx on audit_events (actor_id, at desc)');
  await knex.raw('create index audit_events_target_idx on audit_events (target_id, at desc)');
  await knex.raw('create index audit_events_org_idx on audit_events (org_id, at desc)');
}
