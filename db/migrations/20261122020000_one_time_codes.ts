import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('one_time_codes', (t) => {
    t.bigIncrements('id').primary();
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('purpose').notNullable(); // verify_email | password_reset
    t.binary('code_hash').notNullable(); // HMAC of the 6-digit code; the code itself is only mailed
    t.integer('failed_attempts').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
  });
  await knex.raw('create index one_time_codes_user_purpose_idx on one_time_codes (user_id, purpose, id desc)');
  await knex.raw('create index one_time_codes_expires_at_idx on one_time_codes (expires_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('one_time_codes');
}
