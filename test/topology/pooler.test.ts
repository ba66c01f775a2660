// The service as users deploy it: requests through PgBouncer 1.18 in `pool_mode = transaction`
// (DATABASE_APP_URL at the pooler, DATABASE_POOLER=transaction), the owner's DATABASE_URL direct
// for migrations. Every operation works (no named prepared statement, no startup parameter the
// pooler refuses); the row-level security context of one user never reaches another user's
// request on the same server connection; a pooler with no server connection to give answers
// 503 `unavailable` at once, never 500. Each describe runs its own PgBouncer.
import { Client } from 'pg';
import { capturingLogger, linesWith } from '../support/logs';
import { cloneTemplateDatabase, databaseUrl, dropDatabase, grantAppRole } from '../support/databases';
import { expectUnavailableWithin, timed } from '../support/outages';
import { createPooledRole, PgBouncer } from '../support/pgbouncer';
import { killAll, request, serveEnv, start, waitFor as waitForProcess } from '../support/processes';
import { TestSmtpServer } from '../support/smtp';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { waitFor } from '../support/wait';
import { loadConfig } from '../../src/config';
import { createDatabase } from '../../src/platform/database';
import { checkStatementTimeout, provisionAppRole } from '../../src/platform/database-roles';

const PASSWORD = 'correct horse battery staple';

type Role = Awaited<ReturnType<typeof createPooledRole>>;

/** PgBouncer's counters for one database (SHOW STATS on its admin console, as a `stats_users` member). */
async function pgbouncerStats(bouncer: PgBouncer, role: Role, database: string): Promise<{ xacts: number; queries: number }> {
  const admin = new Client({ connectionString: bouncer.url(role.name, role.password, 'pgbouncer') });
  await admin.connect();
  try {
    const { rows } = await admin.query('SHOW STATS');
    const row = rows.find((r) => r.database === database);
    return { xacts: Number(row?.total_xact_count ?? 0), queries: Number(row?.total_query_count ?? 0) };
  } finally {
    await admin.end();
  }
}

/** Server connections PostgreSQL holds for `role` in `database` (PgBouncer's, since nothing else logs in as it). */
async function serverConnections(database: string, role: string): Promise<number> {
  const admin = new Client({ connectionString: databaseUrl('postgres') });
  await admin.connect();
  try {
    const { rows } = await admin.query('select count(*)::int as n from pg_stat_activity where datname = $1 and usename = $2', [database, role]);
    return rows[0].n;
  } finally {
    await admin.end();
  }
}

const databaseOf = (t: TestApp) => new URL(t.ctx.config.databaseUrl!).pathname.slice(1);

describe('every operation through PgBouncer in transaction mode', () => {
  let role: Role;
  let bouncer: PgBouncer;
  let smtp: TestSmtpServer;
  let t: TestApp;

  beforeAll(async () => {
    role = await createPooledRole(19_900);
    // Two server connections for the app's five: statements of different clients meet on them.
    bouncer = await PgBouncer.start({ users: { [role.name]: role.password }, defaultPoolSize: 2, settings: { stats_users: role.name } });
    smtp = await TestSmtpServer.start();
    t = await startTestApp(
      { SMTP_URL: smtp.url, INVITATION_URL: 'https://app.example.com/join', BCRYPT_COST: '4' },
      { workers: true, pooler: (database) => bouncer.url(role.name, role.password, database) },
    );
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await smtp?.stop();
    await bouncer?.stop();
    await role?.drop();
  });

  it('requests connect through the pooler as the role the operator made; its default bounds statements', async () => {
    const { rows } = await t.ctx.db.raw("select current_user as role, current_setting('statement_timeout') as timeout");
    expect(rows[0]).toEqual({ role: role.name, timeout: '19900ms' });
    expect(t.ctx.config.databasePooler).toBe('transaction');
    expect(new URL(t.ctx.config.databaseApp.url!).port).toBe(String(bouncer.port));
  });

  it('register, login, /me, sessions, orgs and projects with row-level security, invitations through mail jobs', async () => {
    const before = await pgbouncerStats(bouncer, role, databaseOf(t));
    const email = `pooled-${Date.now()}@example.com`;
    const registered = await t.http.post('/v1/auth/register').send({ email, password: PASSWORD, transport: 'bearer' }).expect(201);
    const login = await t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' }).expect(200);
    const auth = `Bearer ${login.body.token}`;
    expect((await t.http.get('/v1/auth/me').set('Authorization', auth).expect(200)).body.email).toBe(email);
    expect((await t.http.get('/v1/auth/sessions').set('Authorization', auth).expect(200)).body.items).toHaveLength(2);
    await t.http.get('/v1/auth/me').set('Authorization', `Bearer ${registered.body.token}`).expect(200);

    // The verification code travels through a mail job (outbox → BullMQ → worker → SMTP).
    const code = /code is (\d{6})\./.exec((await smtp.waitForMessage((m) => m.to.includes(email))).raw)![1];
    await t.http.post('/v1/auth/verify-email').set('Authorization', auth).send({ code }).expect(200);

    const org = (await t.http.post('/v1/orgs').set('Authorization', auth).send({ name: 'Pooled Co' }).expect(201)).body;
    const project = (await t.http.post(`/v1/orgs/${org.id}/projects`).set('Authorization', auth).send({ name: 'Through the pooler' }).expect(201)).body;
    expect((await t.http.get('/v1/orgs').set('Authorization', auth).expect(200)).body.items.map((o: any) => o.id)).toEqual([org.id]);
    expect((await t.http.get(`/v1/orgs/${org.id}/projects`).set('Authorization', auth).expect(200)).body.items.map((p: any) => p.id)).toEqual([project.id]);
    await t.http.patch(`/v1/orgs/${org.id}/projects/${project.id}`).set('Authorization', auth).send({ description: 'pooled' }).expect(200);

    // An invitation mailed by a job and accepted by the invitee.
    const invitee = await signedInUser(t.ctx, { verified: true });
    await t.http.post(`/v1/orgs/${org.id}/invitations`).set('Authorization', auth).send({ email: invitee.email, role: 'member' }).expect(201);
    const mail = await smtp.waitForMessage((m) => m.to.includes(invitee.email));
    const token = /#token=([A-Za-z0-9_-]{43})/.exec(mail.raw.replace(/=\r?\n/g, '').replace(/=3D/g, '='))![1]!;
    await t.http.post('/v1/invitations/accept').set('Authorization', invitee.auth).send({ token }).expect(200);
    const members = (await t.http.get(`/v1/orgs/${org.id}/members`).set('Authorization', invitee.auth).expect(200)).body.items;
    expect(members).toHaveLength(2);
    // Another user sees none of it.
    const stranger = await signedInUser(t.ctx, { verified: true });
    expect((await t.http.get('/v1/orgs').set('Authorization', stranger.auth).expect(200)).body.items).toEqual([]);
    await t.http.get(`/v1/orgs/${org.id}/projects`).set('Authorization', stranger.auth).expect(404);

    await t.http.post('/v1/auth/logout').set('Authorization', auth).expect(204);
    await t.http.get('/v1/auth/me').set('Authorization', auth).expect(401);

    const after = await pgbouncerStats(bouncer, role, databaseOf(t));
    expect(after.xacts - before.xacts).toBeGreaterThan(20);
  }, 60_000);

  it('many clients at once on two server connections: the hot statements (unnamed here) never meet another client\'s', async () => {
    const users = await Promise.all([1, 2, 3, 4].map(() => signedInUser(t.ctx, { verified: true })));
    const orgs = await Promise.all(users.map((u, i) => t.http.post('/v1/orgs').set('Authorization', u.auth).send({ name: `Busy ${i}` }).expect(201)));
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const u = users[i % users.length]!;
        const org = orgs[i % users.length]!.body;
        return i % 2 ? t.http.get('/v1/auth/me').set('Authorization', u.auth) : t.http.get(`/v1/orgs/${org.id}/projects`).set('Authorization', u.auth);
      }),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
  }, 60_000);

  it('/ops: a job run end to end (run now → worker → completed), the runs list, the overview', async () => {
    const operator = await signedInUser(t.ctx, { operator: true, verified: true });
    const run = (await t.http.post('/ops/jobs/definitions/service.retention.enforce/run').set('Authorization', operator.auth).expect(202)).body;
    const done = await waitFor('the run to complete', async () => {
      const res = await t.http.get(`/ops/jobs/runs/${run.id}`).set('Authorization', operator.auth).expect(200);
      return res.body.state === 'completed' ? res.body : null;
    }, 30_000);
    expect(done).toMatchObject({ id: run.id, kind: 'service.retention.enforce', state: 'completed' });
    const runs = (await t.http.get('/ops/jobs/runs?kind=service.retention.enforce').set('Authorization', operator.auth).expect(200)).body.items;
    expect(runs.map((r: any) => r.id)).toContain(run.id);
    await t.http.get('/ops/jobs/overview').set('Authorization', operator.auth).expect(200);
    await t.http.get('/ops/audit').set('Authorization', operator.auth).expect(200);
  }, 60_000);
});

describe('row-level security context through one shared server connection', () => {
  let role: Role;
  let bouncer: PgBouncer;
  let t: TestApp;

  beforeAll(async () => {
    role = await createPooledRole(19_900);
    bouncer = await PgBouncer.start({ users: { [role.name]: role.password }, defaultPoolSize: 1 });
    t = await startTestApp({}, { pooler: (database) => bouncer.url(role.name, role.password, database) });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await bouncer?.stop();
    await role?.drop();
  });

  async function tenant(name: string, orgCount: number) {
    const user = await signedInUser(t.ctx, { verified: true });
    const orgs: string[] = [];
    for (let i = 0; i < orgCount; i++) {
      const org = (await t.http.post('/v1/orgs').set('Authorization', user.auth).send({ name: `${name} ${i}` }).expect(201)).body;
      await t.http.post(`/v1/orgs/${org.id}/projects`).set('Authorization', user.auth).send({ name: `${name} project ${i}` }).expect(201);
      orgs.push(org.id);
    }
    return { user, orgs: orgs.sort() };
  }

  it("two users' requests interleaved on the one server connection: each sees only its own organisations", async () => {
    const a = await tenant('Alpha', 2);
    const b = await tenant('Beta', 1);
    const seenBy = (res: { body: { items: { id?: string; org_id?: string }[] } }) => res.body.items.map((i) => i.org_id ?? i.id).sort();
    const answers = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const [me, other] = i % 2 ? [a, b] : [b, a];
        const orgs = seenBy(await t.http.get('/v1/orgs').set('Authorization', me.user.auth).expect(200));
        const projects = seenBy(await t.http.get(`/v1/orgs/${me.orgs[0]}/projects`).set('Authorization', me.user.auth).expect(200));
        await t.http.get(`/v1/orgs/${other.orgs[0]}/projects`).set('Authorization', me.user.auth).expect(404);
        await t.http.get(`/v1/orgs/${other.orgs[0]}`).set('Authorization', me.user.auth).expect(404);
        return { me, orgs, projects };
      }),
    );
    for (const { me, orgs, projects } of answers) {
      expect(orgs).toEqual(me.orgs);
      expect(projects).toEqual([me.orgs[0]]);
    }
    // They all went through PostgreSQL's one connection for this role and database.
    expect(await serverConnections(databaseOf(t), role.name)).toBe(1);
    // And it keeps no one's context: a statement outside any transaction sees no tenant row.
    const { rows } = await t.ctx.db.raw("select current_setting('app.user_id', true) as acting, (select count(*)::int from organisations) as visible");
    expect(rows[0].visible).toBe(0);
    expect(['', null]).toContain(rows[0].acting);
  }, 60_000);

  it('two clients on the one server connection: the transaction-local context ends with the transaction; a session setting would leak (the control)', async () => {
    const a = await tenant('Gamma', 1);
    const url = bouncer.url(role.name, role.password, databaseOf(t));
    const first = new Client({ connectionString: url });
    const second = new Client({ connectionString: url });
    await Promise.all([first.connect(), second.connect()]);
    try {
      const pid = async (c: Client) => (await c.query('select pg_backend_pid() as pid')).rows[0].pid;
      const asSecond = async () => (await second.query("select current_setting('app.user_id', true) as acting, (select count(*)::int from organisations) as visible")).rows[0];

      await first.query('begin');
      await first.query("select set_config('app.user_id', $1, true)", [a.user.userId]);
      expect((await first.query('select count(*)::int as n from organisations')).rows[0].n).toBe(1);
      const firstPid = await pid(first);
      await first.query('commit');
      // The single statement that is the whole project list sets its own context the same way.
      await first.query('select * from app_org_projects($1, $2, null, 10)', [a.user.userId, a.orgs[0]]);
      expect(await pid(second)).toBe(firstPid);
      const after = await asSecond();
      expect(after.visible).toBe(0);
      expect(['', null]).toContain(after.acting);

      // What the test would catch: a session-level setting outlives the transaction and reaches the next client.
      await first.query("select set_config('app.user_id', $1, false)", [a.user.userId]);
      expect(await asSecond()).toEqual({ acting: a.user.userId, visible: 1 });
    } finally {
      await Promise.all([first.end(), second.end()]);
    }
  }, 60_000);
});

describe('a pooler with no server connection to give', () => {
  const BOUND_MS = 500;
  let role: Role;
  let bouncer: PgBouncer;
  let t: TestApp;
  const logs: string[] = [];

  beforeAll(async () => {
    role = await createPooledRole(BOUND_MS - 100);
    // One server connection, and room for four clients: the holder below and three of the app's five.
    bouncer = await PgBouncer.start({ users: { [role.name]: role.password }, defaultPoolSize: 1, maxClientConn: 4 });
    t = await startTestApp(
      { LOG_LEVEL: 'debug', BCRYPT_COST: '4', DATABASE_CONNECT_TIMEOUT_MS: String(BOUND_MS), DATABASE_QUERY_TIMEOUT_MS: String(BOUND_MS) },
      { pooler: (database) => bouncer.url(role.name, role.password, database), logger: capturingLogger(logs) },
    );
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await bouncer?.stop();
    await role?.drop();
  });

  /** A transaction through the pooler holding its only server connection, until the returned function ends it. */
  async function holdTheServerConnection(): Promise<() => Promise<void>> {
    const holder = new Client({ connectionString: bouncer.url(role.name, role.password, databaseOf(t)) });
    await holder.connect();
    await holder.query('begin');
    await holder.query('select 1');
    return async () => {
      await holder.query('commit');
      await holder.end();
    };
  }

  it('a BEGIN waiting for the pooler: 503 unavailable within the bound, not 500; the connection given up on is closed, so that BEGIN never runs later', async () => {
    const email = `starved-${Date.now()}@example.com`;
    await t.http.post('/v1/auth/register').send({ email, password: PASSWORD, transport: 'bearer' }).expect(201);
    const release = await holdTheServerConnection();
    try {
      logs.length = 0;
      // Registration's first statement is its transaction's BEGIN.
      const register = await timed(() => t.http.post('/v1/auth/register').send({ email: `second-${email}`, password: PASSWORD, transport: 'bearer' }));
      expectUnavailableWithin(BOUND_MS, [register]);
      const [down] = linesWith(logs, 'dependency down: requests that need it answer 503 until it is back');
      expect(down).toMatchObject({ dependency: 'database', error: expect.stringMatching(/^BEGIN;? - Query read timeout$/) });
      expect(linesWith(logs, 'request failed')).toEqual([]);
    } finally {
      await release();
    }
    // Had the pool kept that client connection, the pooler would now run its BEGIN on the freed
    // server connection and leave it idle in a transaction, for the pool's next request to run in.
    await new Promise((r) => setTimeout(r, 300));
    const admin = new Client({ connectionString: databaseUrl('postgres') });
    await admin.connect();
    try {
      const { rows } = await admin.query('select state from pg_stat_activity where datname = $1 and usename = $2', [databaseOf(t), role.name]);
      expect(rows.map((r) => r.state)).not.toContain('idle in transaction');
    } finally {
      await admin.end();
    }
    const { rows } = await t.ctx.db.raw('select now() = statement_timestamp() as own_transaction');
    expect(rows[0].own_transaction).toBe(true);
    await t.http.post('/v1/auth/register').send({ email: `third-${email}`, password: PASSWORD, transport: 'bearer' }).expect(201);
  }, 60_000);

  it('more requests than the pooler takes clients, while a transaction holds its only server connection: each 503 within the bound; back once it ends', async () => {
    const email = `crowd-${Date.now()}@example.com`;
    await t.http.post('/v1/auth/register').send({ email, password: PASSWORD, transport: 'bearer' }).expect(201);
    const { auth } = await signedInUser(t.ctx, { verified: true });
    const release = await holdTheServerConnection();
    try {
      logs.length = 0;
      // Waiting clients time out on the client; those over max_client_conn are refused at once (08P01).
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          timed(() =>
            [
              () => t.http.get('/v1/auth/me').set('Authorization', auth),
              () => t.http.get('/v1/orgs').set('Authorization', auth),
              () => t.http.post('/v1/orgs').set('Authorization', auth).send({ name: 'Starved' }),
              () => t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' }),
            ][i % 4]!(),
          ),
        ),
      );
      expectUnavailableWithin(BOUND_MS, answers);
      expect(linesWith(logs, 'request failed')).toEqual([]);
    } finally {
      await release();
    }
    await waitFor('the service to answer again', async () => (await t.http.get('/v1/auth/me').set('Authorization', auth)).status === 200, 20_000);
    await t.http.post('/v1/orgs').set('Authorization', auth).send({ name: 'Fed again' }).expect(201);
  }, 60_000);
});

describe('the statement bound lives in the role, not the connection', () => {
  it("for the role the service manages it sets the role's default in this database at start; for an operator's role it warns when missing", async () => {
    const name = await cloneTemplateDatabase();
    const env = { NODE_ENV: 'test', DATABASE_URL: databaseUrl(name), DATABASE_POOLER: 'transaction', DATABASE_QUERY_TIMEOUT_MS: '1500' };
    const config = loadConfig(env);
    const owner = createDatabase(config.databaseUrl!, 1);
    const role = await createPooledRole(0);
    const bouncer = await PgBouncer.start({ users: { [role.name]: role.password } });
    const lines: string[] = [];
    try {
      await provisionAppRole(owner, config);
      const { rows } = await owner.raw(
        `select s.setconfig from pg_db_role_setting s join pg_roles r on r.oid = s.setrole join pg_database d on d.oid = s.setdatabase
          where r.rolname = 'tenant_api_app' and d.datname = current_database()`,
      );
      expect(rows[0].setconfig).toContain('statement_timeout=1400');

      // An operator's role without the default (statement_timeout 0): named, with the fix.
      const operated = loadConfig({ ...env, DATABASE_APP_URL: bouncer.url(role.name, role.password, name) });
      await grantAppRole(operated);
      const pooled = createDatabase(operated.databaseApp.url!, 1, undefined, operated.databaseTimeouts, 'transaction');
      try {
        await checkStatementTimeout(pooled, operated, capturingLogger(lines));
      } finally {
        await pooled.destroy();
      }
      expect(lines.map((l) => JSON.parse(l))).toEqual([
        expect.objectContaining({ level: 'warn', role: role.name, statement_timeout_ms: 0, fix: `ALTER ROLE "${role.name}" SET statement_timeout = 1400` }),
      ]);
    } finally {
      await owner.destroy();
      await bouncer.stop();
      await dropDatabase(name);
      await role.drop();
    }
  }, 60_000);
});

describe('a service process, started as users deploy it', () => {
  afterAll(() => killAll());

  it('with DATABASE_APP_URL at PgBouncer (transaction mode, no ignore_startup_parameters) it becomes ready and serves', async () => {
    const name = await cloneTemplateDatabase();
    const role = await createPooledRole(900);
    const bouncer = await PgBouncer.start({ users: { [role.name]: role.password }, defaultPoolSize: 2 });
    try {
      const { port, env } = await serveEnv(databaseUrl(name));
      const proc = start(['serve'], { ...env, DATABASE_APP_URL: bouncer.url(role.name, role.password, name), DATABASE_POOLER: 'transaction', BCRYPT_COST: '4' });
      await waitForProcess('the service to be ready', async () => (await request(port, 'GET', '/readyz')).status === 200, 30_000, proc);
      const reg = await request(port, 'POST', '/v1/auth/register', { body: { email: `process-${Date.now()}@example.com`, password: PASSWORD, transport: 'bearer' } });
      expect(reg.status).toBe(201);
      expect((await request(port, 'GET', '/v1/auth/me', { headers: { Authorization: `Bearer ${reg.body.token}` } })).status).toBe(200);
      // Ready at the first attempt (no startup parameter refused), and the role's statement bound found.
      const said = proc.logs().map((l) => l.message);
      expect(said).toContain('database ready');
      expect(said.filter((m) => /unreachable|statement_timeout|cannot serve/.test(m))).toEqual([]);
    } finally {
      await killAll();
      await bouncer.stop();
      await dropDatabase(name);
      await role.drop();
    }
  }, 90_000);
});
