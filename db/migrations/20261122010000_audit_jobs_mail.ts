import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('audit_events', (t) => {
    t.text('id').primary(); // aud_<ulid>
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('action').notNullable();
    t.text('actor_kind').notNullable(); // user | operator | system | provider
    t.text('actor_id');
    t.text('target_kind');
    t.text('target_id');
    t.text('org_id');
    t.text('ip');
    t.text('user_agent');
    t.text('request_id');
    t.jsonb('data').notNullable().defaultTo('{}');
  });
  await knex.raw('create index audit_events_at_idx on audit_events (at desc, id desc)');
  await knex.raw('create index audit_events_action_idx on audit_events (action, at desc)');
  await knex.raw('create index audit_events_actor_idx on audit_events (actor_id, at desc)');
  await knex.raw('create index audit_events_target_idx on audit_events (target_id, at desc)');
  await knex.raw('create index audit_events_org_idx on audit_events (org_id, at desc)');

  await knex.schema.createTable('job_runs', (t) => {
    t.bigIncrements('id').primary();
    t.text('kind').notNullable();
    t.text('queue').notNullable();
    t.integer('priority').notNullable();
    t.text('state').notNullable();
    t.integer('attempt').notNullable().defaultTo(0);
    t.integer('max_attempts').notNullable();
    t.integer('timeout_ms').notNullable();
    t.jsonb('payload').notNullable().defaultTo('{}');
    t.jsonb('errors').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('scheduled_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('attempted_at', { useTz: true });
    t.timestamp('finalized_at', { useTz: true });
    // Outbox: set once BullMQ holds the job; the sweeper hands over rows where it is null.
    t.timestamp('handed_over_at', { useTz: true });
    t.text('actor_kind').notNullable();
    t.text('actor_id');
    t.text('request_id');
  });
  await knex.raw(
    "alter table job_runs add constraint job_runs_state_check check (state in ('scheduled','available','running','retryable','completed','cancelled','discarded'))",
  );
  await knex.raw('create index job_runs_kind_idx on job_runs (kind, id desc)');
  await knex.raw('create index job_runs_state_idx on job_runs (state, id desc)');
  await knex.raw('create index job_runs_queue_idx on job_runs (queue, id desc)');
  await knex.raw("create index job_runs_outbox_idx on job_runs (id) where handed_over_at is null and state in ('scheduled','available')");
  await knex.raw('create index job_runs_finalized_idx on job_runs (finalized_at) where finalized_at is not null');

  await knex.schema.createTable('job_definitions', (t) => {
    t.text('name').primary();
    t.jsonb('override'); // partial config stored by operators; null = code defaults
    t.integer('version').notNullable().defaultTo(1);
    t.timestamp('updated_at', { useTz: true });
    t.text('updated_by');
  });
  await knex.schema.createTable('job_definition_history', (t) => {
    t.bigIncrements('id').primary();
    t.text('name').notNullable();
    t.integer('version').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('by');
    t.text('reason').notNullable();
    t.text('action').notNullable(); // updated | reset
    t.jsonb('config_before').notNullable();
    t.jsonb('config_after').notNullable();
  });
  await knex.raw('create index job_definition_history_name_idx on job_definition_history (name, id desc)');

  await knex.schema.createTable('queue_states', (t) => {
    t.text('name').primary();
    t.boolean('paused').notNullable().defaultTo(false);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('updated_by');
  });

  await knex.schema.createTable('mail_messages', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('job_run_id');
    t.text('to').notNullable();
    t.text('subject').notNullable();
    t.text('text').notNullable();
    t.text('html').notNullable();
    t.text('transport').notNullable(); // smtp | log
    t.text('message_id');
    t.timestamp('sent_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('create index mail_messages_sent_at_idx on mail_messages (sent_at)');
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['mail_messages', 'queue_states', 'job_definition_history', 'job_definitions', 'job_runs', 'audit_events']) {
    await knex.schema.dropTable(table);
  }
}
