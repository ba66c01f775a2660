// Rolling counters for the jobs overview and the queue list, kept by the database itself: runs per
// (kind, queue, state), and failed attempts per minute. Every statement that writes job_runs
// (insert, update, delete, truncate) changes them in its own transaction through statement-level
// triggers with transition tables, so no code path can forget them: one small change per
// (kind, queue, state) group and per minute a statement touched, whatever its number of rows
// (a worker's batch of 500 updates, a retention batch of 1,000 deletes). Readers sum a few rows.
//
// Contention. A counter row a transaction changes stays locked until it commits (an enqueue inside
// a sign-up's transaction, say). Each group therefore has as many rows ("shards") as writers ever
// needed at the same time: a writer takes the first row of its group that no other transaction
// holds (FOR UPDATE SKIP LOCKED), and adds a row with a new shard number when all are held. No
// writer ever waits for another's counter row, so the counters add neither waits nor deadlocks
// to job_runs writes; rows stay few (a group has at most as many as its peak of concurrent
// writers). A shard's value may be negative (its runs were counted in another shard and left from
// this one): only the sum over a group's shards means anything.
//
// Failures: each entry appended to a run's `errors` counts in the bucket of the minute of its own
// `at` (the application's clock, which `at` and the overview's 24-hour window both use); entries
// that disappear (a run deleted) are subtracted. Buckets older than two days by the database's
// clock are never written and are deleted whenever a new bucket row is made (SKIP LOCKED again):
// no retention job has to prune them.
//
// Privileges: the trigger function is SECURITY DEFINER with a fixed search_path, so it writes the
// counters as their owner whatever the application role (subject to row-level security, possibly
// managed by an operator) is granted; that role only needs to read them. The helpers it calls are
// not callable by PUBLIC.
//
// Transactions writing job_runs run at READ COMMITTED (the default, used everywhere): at
// REPEATABLE READ a counter row changed by a transaction committed after the snapshot would make
// the write fail with a serialization error.
import type { Knex } from 'knex';

const BUCKET = "interval '1 minute'";
const KEPT_SINCE = "now() - interval '2 days'";
/**
 * An `errors` entry's `at` as a timestamp; null (never cast) unless it is an ISO 8601 time with an
 * offset, as the service writes it: a malformed entry (or `errors` not an array, below) is not
 * counted rather than failing the write. (No `?` in here: knex would take it for a binding.)
 */
const ERROR_AT = `case when e->>'at' ~ '^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+){0,1}(Z|[+-]\\d\\d:\\d\\d)$' then (e->>'at')::timestamptz end`;

/**
 * The net changes of `changes` (rows of job_runs with `sign` +1 when added, -1 when removed):
 * (kind, queue, state, null, n) per run group and (null, null, null, bucket, n) per minute of
 * failed attempts, zero changes left out.
 */
const deltas = (changes: string) => `
  with c as (${changes})
  select kind, queue, state, null::timestamptz as bucket, sum(sign)::bigint as n
  from c group by kind, queue, state having sum(sign) <> 0
  union all
  select null, null, null, f.bucket, sum(c.sign)::bigint
  from c cross join lateral (
    select date_bin(${BUCKET}, ${ERROR_AT}, timestamptz 'epoch') as bucket
    from jsonb_array_elements(case jsonb_typeof(c.errors) when 'array' then c.errors end) e
  ) f
  where c.errors <> '[]'::jsonb and f.bucket >= date_bin(${BUCKET}, ${KEPT_SINCE}, timestamptz 'epoch')
  group by f.bucket having sum(c.sign) <> 0`;

const apply = (changes: string) => `
    for d in ${deltas(changes)} loop
      if d.bucket is null then perform job_run_counts_add(d.kind, d.queue, d.state, d.n);
      else perform job_failure_counts_add(d.bucket, d.n);
      end if;
    end loop;`;

const COLUMNS = 'kind, queue, state, errors';

export async function up(knex: Knex): Promise<void> {
  // No write to job_runs commits between the triggers' creation and the backfill (both in this
  // migration's transaction): the backfill counts exactly the rows the triggers will not see.
  await knex.raw('lock table job_runs in share row exclusive mode');
  await knex.raw(`
    create table job_run_counts (
      kind text not null,
      queue text not null,
      state text not null,
      shard bigint not null,
      n bigint not null,
      primary key (kind, queue, state, shard)
    ) with (fillfactor = 50);

    create table job_failure_counts (
      bucket timestamptz not null,  -- the minute of the entries' \`at\`
      shard bigint not null,
      n bigint not null,
      primary key (bucket, shard)
    ) with (fillfactor = 50);

    -- New shard numbers: never one another writer is inserting, so making a row never waits either.
    create sequence job_counter_shards;

    create function job_run_counts_add(p_kind text, p_queue text, p_state text, p_n bigint) returns void
      language plpgsql set search_path = pg_catalog, public as $$
    declare
      s bigint;
    begin
      select shard into s from job_run_counts where kind = p_kind and queue = p_queue and state = p_state
        order by shard limit 1 for update skip locked;
      if found then
        update job_run_counts set n = n + p_n where kind = p_kind and queue = p_queue and state = p_state and shard = s;
      else
        insert into job_run_counts (kind, queue, state, shard, n) values (p_kind, p_queue, p_state, nextval('job_counter_shards'), p_n);
      end if;
    end $$;

    create function job_failure_counts_add(p_bucket timestamptz, p_n bigint) returns void
      language plpgsql set search_path = pg_catalog, public as $$
    declare
      s bigint;
    begin
      select shard into s from job_failure_counts where bucket = p_bucket order by shard limit 1 for update skip locked;
      if found then
        update job_failure_counts set n = n + p_n where bucket = p_bucket and shard = s;
      else
        insert into job_failure_counts (bucket, shard, n) values (p_bucket, nextval('job_counter_shards'), p_n);
        -- About once a minute: the buckets no 24-hour window reads any more go.
        delete from job_failure_counts where ctid in (
          select ctid from job_failure_counts where bucket < date_bin(${BUCKET}, ${KEPT_SINCE}, timestamptz 'epoch') for update skip locked);
      end if;
    end $$;

    create function job_runs_count_changes() returns trigger
      language plpgsql security definer set search_path = pg_catalog, public as $$
    declare
      d record;
    begin
      if TG_OP = 'INSERT' then ${apply(`select ${COLUMNS}, 1 as sign from new_rows`)}
      elsif TG_OP = 'DELETE' then ${apply(`select ${COLUMNS}, -1 as sign from old_rows`)}
      else ${apply(`select ${COLUMNS}, 1 as sign from new_rows union all select ${COLUMNS}, -1 from old_rows`)}
      end if;
      return null;
    end $$;

    create function job_runs_truncated() returns trigger
      language plpgsql security definer set search_path = pg_catalog, public as $$
    begin
      delete from job_run_counts;
      delete from job_failure_counts;
      return null;
    end $$;

    revoke all on function job_run_counts_add(text, text, text, bigint), job_failure_counts_add(timestamptz, bigint) from public;

    -- UPDATE fires on every update (a trigger with transition tables cannot name columns); an
    -- update that changes no state and no errors (a hand-over mark) nets to no change at all.
    create trigger job_runs_counters_insert after insert on job_runs
      referencing new table as new_rows for each statement execute function job_runs_count_changes();
    create trigger job_runs_counters_update after update on job_runs
      referencing new table as new_rows old table as old_rows for each statement execute function job_runs_count_changes();
    create trigger job_runs_counters_delete after delete on job_runs
      referencing old table as old_rows for each statement execute function job_runs_count_changes();
    create trigger job_runs_counters_truncate after truncate on job_runs
      for each statement execute function job_runs_truncated();
  `);

  // What is there already, as shard 0 of each group and minute.
  await knex.raw(`
    with d as (${deltas(`select ${COLUMNS}, 1 as sign from job_runs`)}),
    counts as (insert into job_run_counts (kind, queue, state, shard, n) select kind, queue, state, 0, n from d where bucket is null)
    insert into job_failure_counts (bucket, shard, n) select bucket, 0, n from d where bucket is not null`);

  // The overview's oldest wait: the first entry of this index.
  await knex.raw("create index job_runs_available_scheduled_idx on job_runs (scheduled_at) where state = 'available'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index if exists job_runs_available_scheduled_idx;
    drop trigger if exists job_runs_counters_truncate on job_runs;
    drop trigger if exists job_runs_counters_delete on job_runs;
    drop trigger if exists job_runs_counters_update on job_runs;
    drop trigger if exists job_runs_counters_insert on job_runs;
    drop function if exists job_runs_truncated();
    drop function if exists job_runs_count_changes();
    drop function if exists job_failure_counts_add(timestamptz, bigint);
    drop function if exists job_run_counts_add(text, text, text, bigint);
    drop sequence if exists job_counter_shards;
    drop table if exists job_failure_counts;
    drop table if exists job_run_counts;
  `);
}
