// job_runs takes two updates per run (started, finished), every one a new row version that each
// index of the table must point to. An index keyed on (state, id) got a new key on each of them,
// and its dead entries piled up between vacuums: the workers' writes cost three times as much
// after a few thousand runs. Now:
// - waiting and running runs (a small set) are found by id in a partial index whose key does not
//   change when a run starts;
// - finished runs by (state, id), (kind, id) and (queue, id) in partial indexes that only grow at
//   their end, once per run, when it finishes (not on every start and finish);
// - a `kind` or `queue` filter without a state reads both sets (see store.listRuns).
// Queue tables also want vacuum more often than the default.
import type { Knex } from 'knex';

const FINAL = "state in ('completed','cancelled','discarded')";

export async function up(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists job_runs_state_idx');
  await knex.raw('drop index if exists job_runs_kind_idx');
  await knex.raw('drop index if exists job_runs_queue_idx');
  await knex.raw("create index job_runs_live_idx on job_runs (id desc) where state in ('scheduled','available','retryable','running')");
  await knex.raw(`create index job_runs_final_idx on job_runs (state, id desc) where ${FINAL}`);
  await knex.raw(`create index job_runs_final_kind_idx on job_runs (kind, id desc) where ${FINAL}`);
  await knex.raw(`create index job_runs_final_queue_idx on job_runs (queue, id desc) where ${FINAL}`);
  await knex.raw('alter table job_runs set (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.05)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table job_runs reset (autovacuum_vacuum_scale_factor, autovacuum_vacuum_insert_scale_factor)');
  for (const index of ['job_runs_final_queue_idx', 'job_runs_final_kind_idx', 'job_runs_final_idx', 'job_runs_live_idx']) await knex.raw(`drop index if exists ${index}`);
  await knex.raw('create index job_runs_state_idx on job_runs (state, id desc)');
  await knex.raw('create index job_runs_kind_idx on job_runs (kind, id desc)');
  await knex.raw('create index job_runs_queue_idx on job_runs (queue, id desc)');
}
