import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // One row per setting ever changed: `value` null = no override (the default applies); the row
  // stays after a reset so that `version` keeps growing.
  await knex.schema.createTable('runtime_settings', (t) => {
    t.text('key').primary();
    t.jsonb('value');
    t.integer('version').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.text('updated_by').notNullable();
  });
  await knex.schema.createTable('runtime_setting_history', (t) => {
    t.bigIncrements('id').primary();
    t.text('key').notNullable();
    t.integer('version').notNullable();
    t.timestamp('at', { useTz: true }).notNullable();
    t.text('by').notNullable();
    t.text('reason').notNullable();
    t.text('action').notNullable(); // updated | reset
    t.jsonb('value_before').notNullable();
    t.jsonb('value_after').notNullable();
    t.unique(['key', 'version']);
  });
  // What service.retention.enforce did last, per policy (GET /ops/retention).
  await knex.schema.createTable('retention_runs', (t) => {
    t.text('policy').primary();
    t.timestamp('last_run_at', { useTz: true }).notNullable();
    t.bigInteger('last_deleted').notNullable();
    t.text('keep').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('retention_runs');
  await knex.schema.dropTable('runtime_setting_history');
  await knex.schema.dropTable('runtime_settings');
}
