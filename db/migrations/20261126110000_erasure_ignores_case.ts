import type { Knex } from 'knex';

// Erasing a deleted account's address finds it in any case: an operator's test mail may have been
// sent to Ada@Example.com, an account's address is stored in lower case. The lookups of
// 20261123020000_personal_data_and_pruning move to lower-case expressions.
export async function up(knex: Knex): Promise<void> {
  await knex.raw('drop index mail_messages_to_idx');
  await knex.raw('create index mail_messages_to_lower_idx on mail_messages (lower("to"))');
  await knex.raw('drop index job_runs_payload_to_idx');
  await knex.raw("create index job_runs_payload_to_lower_idx on job_runs (lower(payload->>'to')) where (payload->>'to') is not null");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index job_runs_payload_to_lower_idx');
  await knex.raw("create index job_runs_payload_to_idx on job_runs ((payload->>'to')) where (payload->>'to') is not null");
  await knex.raw('drop index mail_messages_to_lower_idx');
  await knex.raw('create index mail_messages_to_idx on mail_messages ("to")');
}
