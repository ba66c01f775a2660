// Two database roles. The owner (DATABASE_URL, or the embedded server's superuser) runs the
// migrations and owns the tables; requests run as the application role, which row-level security
// applies to. Left to itself the service creates that role and keeps its grants current at every
// start; with DATABASE_APP_URL an operator manages the role and the service only grants.
//
// The managed role's password is made at random once and kept in `app_role_credentials`, which only
// the owner may read: every instance finds the same one, and no secret of the service's
// configuration decides it, so rotating SESSION_SECRET never locks a running instance out.
import { createHmac, randomBytes } from 'node:crypto';
import pg, { escapeIdentifier, escapeLiteral } from 'pg';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Db, DatabaseTarget } from './database';
import { DependencyUnavailable } from './dependencies';

/**
 * What releases before app_role_credentials set (derived from SESSION_SECRET): the password a role
 * that already exists is kept at, so instances of the previous release keep connecting during the
 * upgrade. Never used for a role this service creates.
 */
function legacyPassword(config: Config): string {
  return createHmac('sha256', config.sessionSecret).update(`database-app-role:${config.databaseApp.role}`).digest('base64url');
}

/**
 * Where requests connect: DATABASE_APP_URL, else the owner's URL with the application role's
 * credentials, the password read (as the owner, once per process) when the first connection opens.
 */
export function appDatabase(config: Config, ownerUrl: string, connectMs = 3_000): DatabaseTarget {
  if (config.databaseApp.url) return config.databaseApp.url;
  const role = config.databaseApp.role;
  return async () => {
    const url = new URL(ownerUrl);
    url.username = role;
    url.password = await readAppRolePassword(ownerUrl, role, connectMs);
    return url.toString();
  };
}

async function readAppRolePassword(ownerUrl: string, role: string, connectMs: number): Promise<string> {
  const client = new pg.Client({ connectionString: ownerUrl, connectionTimeoutMillis: connectMs, query_timeout: connectMs, application_name: 'tenant-api' });
  client.on('error', () => undefined); // a connection lost after the answer: nothing waits on it
  try {
    await client.connect();
    const { rows } = await client.query<{ password: string }>('select password from app_role_credentials where role = $1', [role]);
    if (!rows[0]) throw new DependencyUnavailable('database', `The database role "${role}" has no password yet: the service has not prepared this database.`);
    return rows[0].password;
  } catch (err) {
    // 42P01: no such table, a database not migrated yet.
    if ((err as { code?: string }).code === '42P01') throw new DependencyUnavailable('database', 'The database has not been migrated yet.');
    throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The managed role's password: made once (at random for a new role; for a role an earlier release
 * made, the password it already has), then the same for every instance. Concurrent starts agree:
 * the first insert wins and everyone reads it back.
 */
async function managedPassword(owner: Db, config: Config, roleExists: boolean): Promise<string> {
  const role = config.databaseApp.role;
  const initial = roleExists ? legacyPassword(config) : randomBytes(32).toString('base64url');
  await owner.raw('insert into app_role_credentials (role, password) values (?, ?) on conflict (role) do nothing', [role, initial]);
  const { rows } = await owner.raw<{ rows: { password: string }[] }>('select password from app_role_credentials where role = ?', [role]);
  return rows[0]!.password;
}

export class DatabaseRoleError extends Error {}

const CONCURRENT_UPDATE = /tuple concurrently updated|already exists/;

/** Runs a role statement, retrying when another instance changes the same role at that moment. */
async function roleStatement(owner: Db, sql: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await owner.raw(sql);
      return;
    } catch (err) {
      if (attempt >= 5 || !CONCURRENT_UPDATE.test(String((err as Error).message))) throw err;
      await new Promise((r) => setTimeout(r, 20 * attempt));
    }
  }
}

/**
 * After the migrations, as the owner: makes sure the application role exists and can log in
 * (unless DATABASE_APP_URL says an operator manages it), then grants it the rows of every table
 * but not the migration bookkeeping. Idempotent; safe with several instances starting at once.
 */
export async function provisionAppRole(owner: Db, config: Config, logger?: Logger): Promise<void> {
  const role = config.databaseApp.url ? decodeURIComponent(new URL(config.databaseApp.url).username) : config.databaseApp.role;
  const ident = escapeIdentifier(role);
  if (!config.databaseApp.url) {
    const { rows } = await owner.raw<{ rows: unknown[] }>('select 1 from pg_roles where rolname = ?', [role]);
    const password = escapeLiteral(await managedPassword(owner, config, rows.length > 0));
    try {
      await roleStatement(
        owner,
        rows.length
          ? `alter role ${ident} with login nosuperuser nobypassrls password ${password}`
          : `create role ${ident} with login nosuperuser nobypassrls nocreatedb nocreaterole password ${password}`,
      );
    } catch (err) {
      throw new DatabaseRoleError(
        `Could not create or update the database role "${role}" (${(err as Error).message}). Either give the DATABASE_URL user CREATEROLE, ` +
          `or create a role yourself (LOGIN, NOSUPERUSER, NOBYPASSRLS) and set DATABASE_APP_URL to connect as it.`,
      );
    }
    if (!rows.length) logger?.info('database role created for requests', { role });
    if (config.databasePooler === 'transaction') {
      const { rows: here } = await owner.raw<{ rows: { db: string }[] }>('select current_database() as db');
      await roleStatement(owner, `alter role ${ident} in database ${escapeIdentifier(here[0]!.db)} set statement_timeout = ${config.databaseTimeouts.statementMs}`);
    }
  }
  await owner.raw(`
    grant usage on schema public to ${ident};
    grant select, insert, update, delete on all tables in schema public to ${ident};
    grant usage, select, update on all sequences in schema public to ${ident};
    revoke all on knex_migrations, knex_migrations_lock, app_role_credentials from ${ident};
  `);
}

/**
 * Behind a transaction pooler no startup parameter carries statement_timeout (PgBouncer refuses
 * it): the role's default does, which PostgreSQL applies when the pooler opens a server connection.
 * provisionAppRole sets it for the role the service manages; for a role an operator manages
 * (DATABASE_APP_URL), this says when it is missing or not below the client's query timeout. Only
 * a warning: the client's own bound still answers 503 in time, but the server would run on a
 * statement nobody waits for.
 */
export async function checkStatementTimeout(db: Db, config: Config, logger: Logger): Promise<void> {
  if (config.databasePooler !== 'transaction') return;
  const { rows } = await db.raw<{ rows: { role: string; ms: number }[] }>(
    "select current_user as role, setting::int as ms from pg_settings where name = 'statement_timeout'",
  );
  const { role, ms } = rows[0]!;
  const { queryMs, statementMs } = config.databaseTimeouts;
  if (ms > 0 && ms < queryMs) return;
  logger.warn('the database role requests use has no statement_timeout below DATABASE_QUERY_TIMEOUT_MS: behind a transaction pooler it must be its default', {
    role,
    statement_timeout_ms: ms,
    database_query_timeout_ms: queryMs,
    fix: `ALTER ROLE ${escapeIdentifier(role)} SET statement_timeout = ${statementMs}`,
  });
}

/**
 * Refuses to serve when the connection requests use would bypass row-level security: a
 * superuser, a BYPASSRLS role, or the owner of the tenant tables.
 */
export async function assertSubjectToPolicies(db: Db): Promise<void> {
  const { rows } = await db.raw<{ rows: { role: string; rolsuper: boolean; rolbypassrls: boolean; owner: boolean }[] }>(`
    select current_user as role, r.rolsuper, r.rolbypassrls,
           exists (select 1 from pg_tables t where t.tablename = 'organisations' and pg_has_role(current_user, t.tableowner, 'usage')) as owner
    from pg_roles r where r.rolname = current_user`);
  const me = rows[0];
  if (!me) throw new DatabaseRoleError('Could not read the attributes of the database role requests use.');
  const why = me.rolsuper ? 'is a superuser' : me.rolbypassrls ? 'has BYPASSRLS' : me.owner ? 'owns the tenant tables' : null;
  if (why) {
    throw new DatabaseRoleError(
      `The database role requests use ("${me.role}") ${why}, so row-level security would not apply to it. ` +
        'Point DATABASE_APP_URL at a role with LOGIN, NOSUPERUSER, NOBYPASSRLS that does not own the tables (or unset it to let the service manage one).',
    );
  }
}
