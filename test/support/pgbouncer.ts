// A PgBouncer of the test's own (Debian's 1.18, /usr/sbin/pgbouncer) in front of the shared
// PostgreSQL, as production runs the service: a private directory, port, auth file and config,
// started and stopped by the test. It refuses to run as root, so under root it runs as the
// `postgres` system user. Every database name is forwarded (`* =`), so each test's clone is
// reachable through it; clients log in with SCRAM against the auth file, and PgBouncer logs in to
// the server as the same user (the shared server trusts 127.0.0.1).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { adminUrl } from './databases';
import { freePort } from './ports';
import { waitFor } from './wait';

export const PGBOUNCER = '/usr/sbin/pgbouncer';

export interface PgBouncerOptions {
  /** `transaction` (default), as production's pooler; `session` hands a client one server connection for its whole life. */
  poolMode?: 'transaction' | 'session';
  /** Server connections per (database, user) pair. */
  defaultPoolSize?: number;
  /** Client connections PgBouncer accepts in all. */
  maxClientConn?: number;
  /** Users and their passwords, written to the auth file (plain text: PgBouncer then speaks SCRAM and md5). */
  users: Record<string, string>;
  /** Extra `key = value` lines for the [pgbouncer] section. */
  settings?: Record<string, string | number>;
  /** The PostgreSQL it forwards to (a URL; only host and port are read): by default the tests' server. */
  upstream?: string;
}

export class PgBouncer {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();

  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly user: { uid: number; gid: number } | null,
  ) {}

  static async start(options: PgBouncerOptions): Promise<PgBouncer> {
    const user = process.getuid?.() === 0 ? systemUser('postgres') : null;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgbouncer-'));
    const upstream = new URL(options.upstream ?? adminUrl());
    const settings: Record<string, string | number> = {
      listen_addr: '127.0.0.1',
      unix_socket_dir: '',
      auth_type: 'scram-sha-256',
      auth_file: path.join(dir, 'userlist.txt'),
      pool_mode: options.poolMode ?? 'transaction',
      default_pool_size: options.defaultPoolSize ?? 5,
      min_pool_size: 0,
      reserve_pool_size: 0,
      max_client_conn: options.maxClientConn ?? 200,
      logfile: path.join(dir, 'pgbouncer.log'),
      log_connections: 0,
      log_disconnections: 0,
      ...options.settings,
    };
    const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;
    fs.writeFileSync(path.join(dir, 'userlist.txt'), Object.entries(options.users).map(([name, password]) => `${quote(name)} ${quote(password)}\n`).join(''), { mode: 0o600 });
    // A free port may be taken by another process before PgBouncer binds it: then another port.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const ini = [
        '[databases]',
        `* = host=${upstream.hostname} port=${upstream.port || 5432}`,
        '[pgbouncer]',
        `listen_port = ${port}`,
        ...Object.entries(settings).map(([key, value]) => `${key} = ${value}`),
        '',
      ].join('\n');
      fs.writeFileSync(path.join(dir, 'pgbouncer.ini'), ini);
      fs.rmSync(path.join(dir, 'pgbouncer.log'), { force: true });
      if (user) for (const file of ['', 'pgbouncer.ini', 'userlist.txt']) fs.chownSync(path.join(dir, file), user.uid, user.gid);
      const bouncer = new PgBouncer(port, dir, user);
      try {
        await bouncer.start();
        return bouncer;
      } catch (err) {
        if (attempt >= 3 || !/Address already in use/.test(bouncer.log())) {
          fs.rmSync(dir, { recursive: true, force: true });
          throw err;
        }
      }
    }
  }

  /** A connection string through PgBouncer. */
  url(user: string, password: string, database: string): string {
    return `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${this.port}/${encodeURIComponent(database)}`;
  }

  /** PgBouncer's own log (errors it sent to clients, servers it could not reach…), for a failing test's message. */
  log(): string {
    try {
      return fs.readFileSync(path.join(this.dir, 'pgbouncer.log'), 'utf8');
    } catch {
      return '';
    }
  }

  private async start(): Promise<void> {
    const child = spawn(PGBOUNCER, [path.join(this.dir, 'pgbouncer.ini')], { detached: true, stdio: 'ignore', ...(this.user ?? {}) });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    // Its own word that it bound the port (a connection accepted there might be another process's).
    const listening = `listening on 127.0.0.1:${this.port}`;
    await waitFor(`pgbouncer on port ${this.port}`, async () => {
      if (child.exitCode !== null) throw new Error(`pgbouncer exited:\n${this.log()}`);
      return this.log().includes(listening);
    }, 10_000);
  }

  /** Stops PgBouncer (SIGTERM: at once, closing every connection) and removes its files. */
  async stop(): Promise<void> {
    if (this.child && this.child.exitCode === null) {
      this.child.kill('SIGTERM');
      const killed = setTimeout(() => this.child?.kill('SIGKILL'), 5_000);
      await this.exited;
      clearTimeout(killed);
    }
    this.child = null;
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A login role for requests through the pooler, as an operator makes one (DATABASE_APP_URL): a
 * known password, LOGIN NOSUPERUSER NOBYPASSRLS, and the server-side statement bound as the role's
 * default (the startup parameter does not pass a transaction pooler). Roles are cluster-wide, so
 * the name is unique; `drop` removes it once the databases it has privileges in are gone.
 */
export async function createPooledRole(statementTimeoutMs: number, prefix = 'pooled'): Promise<{ name: string; password: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(18).toString('base64url');
  await asAdmin(`create role ${name} login nosuperuser nobypassrls password '${password}'; alter role ${name} set statement_timeout = ${statementTimeoutMs}`);
  return { name, password, drop: () => asAdmin(`drop role if exists ${name}`) };
}

async function asAdmin(sql: string): Promise<void> {
  const client = new Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function systemUser(name: string): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

// ---------------------------------------------------------------------------------------------
// TEST_DATABASE_POOLER=pgbouncer: the suite (or the files named on the command line) with every
// test app's requests through one PgBouncer in transaction mode, started by global setup. Fewer
// server connections per database than a test app's pool holds, so clients really share them.

const SUITE_POOL_SIZE = 3;
/** The test apps' statement bound (DATABASE_QUERY_TIMEOUT_MS 20000 − 100): the pooled role's default. */
const SUITE_STATEMENT_TIMEOUT_MS = 19_900;

export const pooledSuite = () => process.env.TEST_DATABASE_POOLER === 'pgbouncer';

/** Global setup: PgBouncer and its role; their coordinates go to the test workers through the environment. */
export async function startSuitePooler(): Promise<() => Promise<void>> {
  const role = await createPooledRole(SUITE_STATEMENT_TIMEOUT_MS, `${process.env.TEST_RUN_ID}_pooled`);
  const bouncer = await PgBouncer.start({
    users: { [role.name]: role.password },
    defaultPoolSize: SUITE_POOL_SIZE,
    maxClientConn: 500,
    settings: { stats_users: role.name },
  });
  Object.assign(process.env, { TEST_PGBOUNCER_PORT: String(bouncer.port), TEST_PGBOUNCER_USER: role.name, TEST_PGBOUNCER_PASSWORD: role.password });
  // After global teardown has dropped the run's databases (a role with privileges cannot be dropped).
  return async () => {
    try {
      // Evidence in the run's output that the requests did go through the pooler.
      const { databases, transactions } = await carried(bouncer, role);
      console.log(`PgBouncer (pool_mode = transaction, default_pool_size = ${SUITE_POOL_SIZE}) carried ${transactions} transactions for ${databases} test databases`);
    } finally {
      await bouncer.stop();
      await role.drop();
    }
  };
}

async function carried(bouncer: PgBouncer, role: { name: string; password: string }): Promise<{ databases: number; transactions: number }> {
  const admin = new Client({ connectionString: bouncer.url(role.name, role.password, 'pgbouncer') });
  await admin.connect();
  try {
    const rows = (await admin.query('SHOW STATS')).rows.filter((r) => r.database !== 'pgbouncer');
    return { databases: rows.length, transactions: rows.reduce((n, r) => n + Number(r.total_xact_count), 0) };
  } finally {
    await admin.end();
  }
}

/** The settings that send a test app's requests through the run's PgBouncer (none unless TEST_DATABASE_POOLER=pgbouncer). */
export function pooledSuiteSettings(database: string): Record<string, string> {
  if (!pooledSuite()) return {};
  const { TEST_PGBOUNCER_PORT: port, TEST_PGBOUNCER_USER: user, TEST_PGBOUNCER_PASSWORD: password } = process.env;
  if (!port || !user || !password) throw new Error('TEST_DATABASE_POOLER=pgbouncer, but global setup started no PgBouncer');
  return {
    DATABASE_APP_URL: `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
    DATABASE_POOLER: 'transaction',
  };
}
