// Migrations are listed here rather than discovered on disk, so the same list works from
// TypeScript (tests, tsx), from the compiled dist/ build and inside jest.
// Forward-only in production; each file keeps a `down` for local development.
import type { Knex } from 'knex';
import * as usersAndSessions from './20261122000000_users_and_sessions';
import * as auditJobsMail from './20261122010000_audit_jobs_mail';
import * as oneTimeCodes from './20261122020000_one_time_codes';
import * as jobRunsIndexes from './20261122030000_job_runs_indexes';
import * as personalDataAndPruning from './20261123020000_personal_data_and_pruning';
import * as tenants from './20261123100000_tenants';
import * as secondFactors from './20261124000000_second_factors';
import * as runtimeSettings from './20261125000000_runtime_settings';
import * as jobRunCounters from './20261125010000_job_run_counters';
import * as auditReads from './20261125020000_audit_reads';
import * as releasesAndInstances from './20261125030000_releases_and_instances';
import * as socialSignIn from './20261126000000_social_sign_in';
import * as operatorsAndAppRolePassword from './20261126100000_operators_and_app_role_password';
import * as erasureIgnoresCase from './20261126110000_erasure_ignores_case';
import * as jobRunTraceparent from './20261127000000_job_run_traceparent';
import * as idempotencyKeys from './20261128000000_idempotency_keys';
import * as memberOrganisationsInOneStatement from './20261128100000_member_organisations_in_one_statement';

const migrations: Record<string, Knex.Migration> = {
  '20261122000000_users_and_sessions': usersAndSessions,
  '20261122010000_audit_jobs_mail': auditJobsMail,
  '20261122020000_one_time_codes': oneTimeCodes,
  '20261122030000_job_runs_indexes': jobRunsIndexes,
  '20261123020000_personal_data_and_pruning': personalDataAndPruning,
  '20261123100000_tenants': tenants,
  '20261124000000_second_factors': secondFactors,
  '20261125000000_runtime_settings': runtimeSettings,
  '20261125010000_job_run_counters': jobRunCounters,
  '20261125020000_audit_reads': auditReads,
  '20261125030000_releases_and_instances': releasesAndInstances,
  '20261126000000_social_sign_in': socialSignIn,
  '20261126100000_operators_and_app_role_password': operatorsAndAppRolePassword,
  '20261126110000_erasure_ignores_case': erasureIgnoresCase,
  '20261127000000_job_run_traceparent': jobRunTraceparent,
  '20261128000000_idempotency_keys': idempotencyKeys,
  '20261128100000_member_organisations_in_one_statement': memberOrganisationsInOneStatement,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};
