import type { Knex } from 'knex';

// Erasure of a deleted account's address (mail records, job payloads) and the retention job's
// pruning of dead sessions: each lookup gets an index.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('mail_messages', (t) => {
    t.text('template'); // which template rendered the message (null for records made before)
  });
  await knex.raw('create index mail_messages_to_idx on mail_messages ("to")');
  // Only runs that concern an address have an entry (no cost for other kinds).
  await knex.raw("create index job_runs_payload_to_idx on job_runs ((payload->>'to')) where (payload->>'to') is not null");
  await knex.raw('create index sessions_revoked_at_idx on sessions (revoked_at) where revoked_at is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index sessions_revoked_at_idx');
  await knex.raw('drop index job_runs_payload_to_idx');
  await knex.raw('drop index mail_messages_to_idx');
  await knex.schema.alterTable('mail_messages', (t) => {
    t.dropColumn('template');
  });
}
