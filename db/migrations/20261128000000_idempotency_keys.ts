import type { Knex } from 'knex';

// Idempotency keys (README "Safe retries"): the answer a keyed request got, recorded in the same
// transaction as its change, so a retry with the same key replays it instead of changing again.
// One row per caller and key: a key means nothing outside its user (the primary key's first
// column). `fingerprint` is the SHA-256 of what the request asked (operation, caller, path,
// query, body); `body` holds the exact bytes sent (bytea: a replay is byte for byte), `headers`
// only those the operation set (Location, Content-Type), never Set-Cookie.
//
// No row-level security: keys belong to a user, not to an organisation (like sessions), and every
// statement names the caller's own user id; the application role gets its rows like every table's
// (src/platform/database-roles.ts). The rows go with their user (on delete cascade: a stored body
// may name organisations or addresses) and otherwise after `expires_at`, through the retention
// policy `idempotency_keys`, whose index this is.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table idempotency_keys (
      user_id text not null references users(id) on delete cascade,
      key text not null check (char_length(key) between 1 and 255),
      fingerprint bytea not null,
      status smallint not null,
      headers jsonb not null,
      body bytea,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      primary key (user_id, key)
    )`);
  await knex.raw('create index idempotency_keys_expires_at_idx on idempotency_keys (expires_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table idempotency_keys');
}
