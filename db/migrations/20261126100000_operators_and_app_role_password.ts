import type { Knex } from 'knex';

// The application role's password, made once at random and kept here (src/platform/database-roles.ts):
// no longer derived from SESSION_SECRET, so rotating that secret leaves the database connections
// alone. Only the owner reads this table (every start revokes it from the application role).
// And the operators, found at every start among all accounts (OPERATOR_EMAILS' warning about
// unverified ones): a partial index keeps that a look at a handful of rows.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table app_role_credentials (
      role text primary key,
      password text not null,
      created_at timestamptz not null default now()
    )`);
  await knex.raw('create index users_operators_idx on users (id) where is_operator');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index users_operators_idx');
  await knex.raw('drop table app_role_credentials');
}
