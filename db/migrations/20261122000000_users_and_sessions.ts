import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.text('id').primary(); // usr_<ulid>
    t.text('email').notNullable(); // stored lower-cased (normalised)
    t.timestamp('email_verified_at', { useTz: true });
    t.text('name');
    t.text('password_hash'); // null for accounts that only sign in socially or with a passkey
    t.boolean('is_operator').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('create unique index users_email_key on users (email)');

  await knex.schema.createTable('sessions', (t) => {
    t.text('id').primary(); // ses_<ulid>
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.binary('token_hash').notNullable(); // sha-256 of the opaque token; the token itself is never stored
    t.text('transport').notNullable(); // cookie | bearer
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable(); // absolute lifetime
    t.timestamp('revoked_at', { useTz: true });
    t.text('ip');
    t.text('user_agent');
  });
  await knex.raw('create unique index sessions_token_hash_key on sessions (token_hash)');
  await knex.raw('create index sessions_user_id_created_at_idx on sessions (user_id, created_at desc, id desc)');
  await knex.raw('create index sessions_expires_at_idx on sessions (expires_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('sessions');
  await knex.schema.dropTable('users');
}
