import type { Knex } from 'knex';

// The W3C traceparent of the request (or run) that enqueued a run, beside its request_id: the
// worker's span for each attempt continues that trace (README "Traces"). Null when tracing was off.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('job_runs', (t) => {
    t.text('traceparent');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('job_runs', (t) => {
    t.dropColumn('traceparent');
  });
}
