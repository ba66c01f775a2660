// job_runs takes two updates per run (started, finished), and every one changes `state`. An index
// keyed on (state, id) got a new key on each of them, and its dead entries piled up between
// vacuums: the workers' writes cost three times as much after a few thousand runs. Now waiting and
// running runs (a small set) are found by id in a partial index whose key does not change when a
// run starts, and finished runs by (state, id) in one that only ever grows at its end. Both serve
// `?state=` filters, newest first; queue tables also want vacuum more often than the default.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists job_runs_state_idx');
  await knex.raw("create index job_runs_live_idx on job_runs (id desc) where state in ('scheduled','available','retryable','running')");
  await knex.raw("create index job_runs_final_idx on job_runs (state, id desc) where state in ('completed','cancelled','discarded')");
  await knex.raw('alter table job_runs set (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.05)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table job_runs reset (autovacuum_vacuum_scale_factor, autovacuum_vacuum_insert_scale_factor)');
  await knex.raw('drop index if exists job_runs_final_idx');
  await knex.raw('drop index if exists job_runs_live_idx');
  await knex.raw('create index job_runs_state_idx on job_runs (state, id desc)');
}
