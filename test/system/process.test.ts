// The real process, as an operator runs it: `tsx src/main.ts <command>` spawned with its own
// environment, and the compiled `node dist/src/main.js <command>` in the Docker image's layout.
// Covers the production config check, serve (logs, health, readiness, SIGTERM), graceful
// shutdown with a request in flight, the account commands (which database they use), and a
// database down at start.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import knex from 'knex';
import { cloneTemplateDatabase, databaseUrl, dropDatabase } from '../support/databases';
import { freePort } from '../support/ports';
import { embeddedUrl } from '../../src/platform/embedded-postgres';
import {
  buildImageLayout,
  get,
  killAll,
  request,
  serveEnv,
  sleep,
  sockets,
  start,
  startBuilt,
  stopWithSigterm,
  tryConnect,
  waitFor,
  waitForLog,
  withTimeout,
  type Answer,
} from '../support/processes';

/**
 * Starts `serve`, opens a keep-alive POST /v1/echo that has sent only half its body, sends SIGTERM
 * and waits for the shutdown log line. `finishRequest` sends the rest and reads the response.
 */
async function sigtermDuringRequest() {
  const { port, env } = await serveEnv(databaseUrl(dbName));
  const proc = start(['serve'], env);
  await waitFor('GET /readyz 200', async () => (await get(port, '/readyz')).status === 200, 20_000, proc);

  const body = JSON.stringify({ message: 'still in flight' });
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  sockets.add(socket);
  let raw = '';
  socket.setEncoding('utf8').on('data', (d: string) => (raw += d));
  socket.write(
    `POST /v1/echo HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\nContent-Type: application/json\r\n` +
      `X-Request-Id: req_processtest_inflight\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n` +
      body.slice(0, 10),
  );
  await sleep(200); // the server has parsed the headers: the request is in flight

  proc.child.kill('SIGTERM');
  await waitForLog(proc, 'shutting down: no new connections, finishing in-flight requests', 15_000);

  const finishRequest = async (): Promise<Answer> => {
    socket.write(body.slice(10));
    const text = await waitFor('the echo response', () => (/\r\n\r\n\{[\s\S]*\}$/.test(raw) ? raw : null), 5_000, proc);
    const [head, payload] = [text.slice(0, text.indexOf('\r\n\r\n')), text.slice(text.indexOf('\r\n\r\n') + 4)];
    const headers = Object.fromEntries(head.split('\r\n').slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    return { status: Number(head.split(' ')[1]), headers, body: JSON.parse(payload) };
  };
  return { proc, port, socket, finishRequest };
}

// ---------------------------------------------------------------------------------------------

let dbName: string;
beforeAll(async () => {
  dbName = await cloneTemplateDatabase();
});
afterEach(killAll);
afterAll(async () => {
  await killAll();
  if (dbName) await dropDatabase(dbName);
});

describe('production configuration check', () => {
  it('exits 1 naming every missing setting', async () => {
    const proc = start(['serve'], { NODE_ENV: 'production' });
    const { code } = await withTimeout(proc.exit, 15_000, 'the process to exit');
    expect(code).toBe(1);
    expect(proc.stderr()).toContain('Missing required configuration in production');
    for (const name of ['DATABASE_URL', 'SESSION_SECRET', 'PUBLIC_BASE_URL']) expect(proc.stderr()).toContain(name);
  });
});

describe('serve', () => {
  it('answers health and readiness, logs JSON request lines, and stops on SIGTERM', async () => {
    const { port, env } = await serveEnv(databaseUrl(dbName));
    const proc = start(['serve'], env);
    await waitFor('GET /healthz 200', async () => (await get(port, '/healthz')).status === 200, 15_000, proc);
    await waitFor('GET /readyz 200', async () => (await get(port, '/readyz')).status === 200, 10_000, proc);

    const ping = await get(port, '/v1/ping', { 'X-Request-Id': 'req_processtest_1234' });
    expect(ping.status).toBe(200);
    expect(ping.headers['x-request-id']).toBe('req_processtest_1234');

    const line = await waitFor(
      'the request log line',
      () => proc.logs().find((l) => l.message === 'request' && l.request_id === 'req_processtest_1234'),
      5_000,
      proc,
    );
    expect(line).toMatchObject({ level: 'info', method: 'GET', route: '/v1/ping', status: 200, request_id: 'req_processtest_1234' });
    expect(typeof line.duration_ms).toBe('number');
    expect(proc.logs().find((l) => l.message === 'listening')).toMatchObject({ url: `http://127.0.0.1:${port}` });
    // Every non-empty stdout line is JSON.
    const lines = proc.stdout().split('\n').filter(Boolean);
    expect(proc.logs()).toHaveLength(lines.length);

    const { code } = await stopWithSigterm(proc);
    expect(code).toBe(0);
    expect(proc.logs().map((l) => l.message)).toContain('stopped');
  });

  it('finishes an in-flight request on SIGTERM, refuses new connections, then exits 0', async () => {
    const { proc, port, socket, finishRequest } = await sigtermDuringRequest();
    expect(proc.child.exitCode).toBeNull(); // still waiting for our request

    // The listening socket is closed: new connections are refused.
    expect(await tryConnect(port)).toBe('ECONNREFUSED');

    const response = await finishRequest();
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ message: 'still in flight', request_id: 'req_processtest_inflight' });

    socket.end(); // the client is done with its connection
    const { code } = await withTimeout(proc.exit, 5_000, 'the process to exit after the in-flight request');
    expect(code).toBe(0);
    expect(proc.logs().map((l) => l.message)).toContain('stopped');
  });

  // A keep-alive client (agent, load balancer) must not hold the shutdown open until it times out.
  it('exits 0 promptly even when the client keeps its keep-alive connection open', async () => {
    const { proc, finishRequest } = await sigtermDuringRequest();
    expect((await finishRequest()).status).toBe(200);
    const { code } = await withTimeout(proc.exit, 5_000, 'the process to exit with an idle keep-alive connection open');
    expect(code).toBe(0);
  });
});

describe('grant-operator', () => {
  it('exits 1 for an unknown email, and grants the role to an existing account ignoring case, naming the database', async () => {
    const env = { NODE_ENV: 'development', DATABASE_URL: databaseUrl(dbName), LOG_LEVEL: 'info' };
    const unknown = start(['grant-operator', 'nobody@example.com'], env);
    expect((await withTimeout(unknown.exit, 15_000, 'grant-operator to exit')).code).toBe(1);
    expect(unknown.stderr()).toContain(`No account with the email nobody@example.com in ${databaseUrl(dbName)}.`);

    const userDb = knex({ client: 'pg', connection: databaseUrl(dbName), pool: { min: 0, max: 1 } });
    try {
      await userDb.raw(`insert into users (id, email, email_verified_at) values ('usr_01jd8x4k3m5n6p7q8r9s0t1v2w', 'ops@example.com', now())`);
      const granted = start(['grant-operator', 'OPS@example.com'], env);
      const { code } = await withTimeout(granted.exit, 15_000, 'grant-operator to exit');
      expect({ code, stderr: granted.stderr() }).toEqual({ code: 0, stderr: '' });
      expect(granted.logs().find((l) => l.message === 'operator granted')).toMatchObject({ email: 'OPS@example.com', database: databaseUrl(dbName) });
      const row = await userDb('users').where({ id: 'usr_01jd8x4k3m5n6p7q8r9s0t1v2w' }).first();
      expect(row.is_operator).toBe(true);
    } finally {
      await userDb.destroy();
    }
  });

  it('without DATABASE_URL and no embedded database, refuses naming DATABASE_URL and creates nothing', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenant-api-data-'));
    try {
      const proc = start(['grant-operator', 'ops@example.com'], { NODE_ENV: 'development', DATA_DIR: dataDir, LOG_LEVEL: 'info' });
      expect((await withTimeout(proc.exit, 15_000, 'grant-operator to exit')).code).toBe(1);
      expect(proc.stderr()).toContain(`DATABASE_URL is not set, and there is no embedded database under ${path.join(dataDir, 'postgres')}`);
      expect(proc.stderr()).toContain('Set DATABASE_URL to the database the service uses');
      expect(proc.stderr()).not.toContain('No account');
      expect(fs.readdirSync(dataDir)).toEqual([]); // no embedded server was made
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

// `npm start` with no configuration: the embedded PostgreSQL under DATA_DIR. The account
// commands use that same database, whether the service is running (its server, on its port) or
// stopped (started for the command and stopped after it).
describe('account commands on the embedded database of npm start', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenant-api-data-'));
    // Run as root, the embedded server runs as a user of its own, which must reach the directory.
    fs.chmodSync(dataDir, 0o755);
  });
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('grants the role while the service runs on it, and again once it is stopped', async () => {
    const port = await freePort();
    const env = {
      NODE_ENV: 'development',
      DATA_DIR: dataDir,
      EMBEDDED_POSTGRES_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'info',
      REDIS_PREFIX: `test:process:${randomBytes(4).toString('hex')}:`,
    };
    const serve = start(['serve'], env);
    await waitFor('GET /readyz 200', async () => serve.child.exitCode === null && (await get(port, '/readyz')).status === 200, 30_000, serve);
    const registered = await request(port, 'POST', '/v1/auth/register', { body: { email: 'local-ops@example.com', password: 'correct horse battery staple', transport: 'bearer' } });
    expect(registered.status).toBe(201);
    // grant-operator asks for a verified email: its owner would enter the mailed code; here, the row.
    const embeddedDb = knex({ client: 'pg', connection: embeddedUrl(Number(env.EMBEDDED_POSTGRES_PORT)), pool: { min: 0, max: 1 } });
    await embeddedDb('users').where({ email: 'local-ops@example.com' }).update({ email_verified_at: new Date() }).finally(() => embeddedDb.destroy());

    // No EMBEDDED_POSTGRES_PORT: the command finds the running server from its data directory.
    const label = `the embedded PostgreSQL under ${path.join(dataDir, 'postgres')} (DATABASE_URL is not set)`;
    const commandEnv = { NODE_ENV: 'development', DATA_DIR: dataDir, LOG_LEVEL: 'info' };
    const unknown = start(['grant-operator', 'nobody@example.com'], commandEnv);
    expect((await withTimeout(unknown.exit, 15_000, 'grant-operator to exit')).code).toBe(1);
    expect(unknown.stderr()).toContain(`No account with the email nobody@example.com in ${label}.`);

    const granted = start(['grant-operator', 'local-ops@example.com'], commandEnv);
    expect((await withTimeout(granted.exit, 15_000, 'grant-operator to exit')).code).toBe(0);
    expect(granted.logs().find((l) => l.message === 'operator granted')).toMatchObject({ database: label });
    const me = await get(port, '/v1/auth/me', { Authorization: `Bearer ${registered.body.token}` });
    expect(me.body).toMatchObject({ email: 'local-ops@example.com', operator: true });
    expect((await stopWithSigterm(serve)).code).toBe(0);

    // Stopped: the command starts the embedded server itself, and stops it again.
    const disabled = start(['disable-account', 'local-ops@example.com'], { ...commandEnv, EMBEDDED_POSTGRES_PORT: env.EMBEDDED_POSTGRES_PORT });
    expect((await withTimeout(disabled.exit, 30_000, 'disable-account to exit')).code).toBe(0);
    expect(disabled.logs().find((l) => l.message === 'account disabled')).toMatchObject({ database: label, sessionsRevoked: 1 });
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  }, 120_000);
});

// The image has dist/, production node_modules, package.json and openapi.yaml: no src/, no tsx.
describe('the built commands, as in the Docker image', () => {
  let imageDir: string;
  beforeAll(() => {
    imageDir = buildImageLayout();
  }, 60_000);
  afterAll(() => fs.rmSync(imageDir, { recursive: true, force: true }));

  it('node dist/src/main.js grant-operator, disable-account and enable-account work on DATABASE_URL', async () => {
    const env = { NODE_ENV: 'development', DATABASE_URL: databaseUrl(dbName), LOG_LEVEL: 'info' };
    const userDb = knex({ client: 'pg', connection: databaseUrl(dbName), pool: { min: 0, max: 1 } });
    try {
      const id = 'usr_01jd8x4k3m5n6p7q8r9s0t1v4y';
      await userDb.raw(`insert into users (id, email, email_verified_at) values (?, 'image-ops@example.com', now())`, [id]);
      const unknown = startBuilt(imageDir, ['grant-operator', 'nobody@example.com'], env);
      expect((await withTimeout(unknown.exit, 15_000, 'grant-operator to exit')).code).toBe(1);
      expect(unknown.stderr()).toBe(`No account with the email nobody@example.com in ${databaseUrl(dbName)}. Register it first, then run this again.\n`);

      const granted = startBuilt(imageDir, ['grant-operator', 'image-ops@example.com'], env);
      expect((await withTimeout(granted.exit, 15_000, 'grant-operator to exit')).code).toBe(0);
      expect(granted.logs().find((l) => l.message === 'operator granted')).toMatchObject({ email: 'image-ops@example.com', database: databaseUrl(dbName) });
      expect((await userDb('users').where({ id }).first()).is_operator).toBe(true);

      const disabled = startBuilt(imageDir, ['disable-account', 'image-ops@example.com'], env);
      expect((await withTimeout(disabled.exit, 15_000, 'disable-account to exit')).code).toBe(0);
      expect((await userDb('users').where({ id }).first()).disabled_at).not.toBeNull();
      const enabled = startBuilt(imageDir, ['enable-account', 'image-ops@example.com'], env);
      expect((await withTimeout(enabled.exit, 15_000, 'enable-account to exit')).code).toBe(0);
      expect((await userDb('users').where({ id }).first()).disabled_at).toBeNull();
    } finally {
      await userDb.destroy();
    }
  });

  it('without DATABASE_URL refuses naming it: in production by the configuration check, else before any embedded server', async () => {
    const production = startBuilt(imageDir, ['grant-operator', 'ops@example.com'], { NODE_ENV: 'production' });
    expect((await withTimeout(production.exit, 15_000, 'grant-operator to exit')).code).toBe(1);
    expect(production.stderr()).toContain('DATABASE_URL (production does not start an embedded PostgreSQL)');

    const development = startBuilt(imageDir, ['grant-operator', 'ops@example.com'], { NODE_ENV: 'development' });
    expect((await withTimeout(development.exit, 15_000, 'grant-operator to exit')).code).toBe(1);
    expect(development.stderr()).toContain('DATABASE_URL is not set, and there is no embedded database under');
    expect(fs.existsSync(path.join(imageDir, '.data'))).toBe(false);
  });

  it('refuses a database the service never ran on, instead of reporting "no account"', async () => {
    const admin = knex({ client: 'pg', connection: databaseUrl('postgres'), pool: { min: 0, max: 1 } });
    const empty = `process_empty_${randomBytes(4).toString('hex')}`;
    await admin.raw(`create database ${empty}`);
    try {
      const proc = startBuilt(imageDir, ['grant-operator', 'ops@example.com'], { NODE_ENV: 'development', DATABASE_URL: databaseUrl(empty) });
      expect((await withTimeout(proc.exit, 15_000, 'grant-operator to exit')).code).toBe(1);
      expect(proc.stderr()).toBe(`${databaseUrl(empty)} has no accounts table: it is not the service's database, or the service has never started on it.\n`);
    } finally {
      await admin.raw(`drop database if exists ${empty}`);
      await admin.destroy();
    }
  });
});

describe('disable-account and enable-account', () => {
  it('disable ends the sessions and open sign-ins, writes the audit event; enable undoes the flag', async () => {
    const env = { NODE_ENV: 'development', DATABASE_URL: databaseUrl(dbName), LOG_LEVEL: 'info' };
    const userDb = knex({ client: 'pg', connection: databaseUrl(dbName), pool: { min: 0, max: 1 } });
    try {
      const id = 'usr_01jd8x4k3m5n6p7q8r9s0t1v3x';
      await userDb.raw(`insert into users (id, email) values (?, 'disable-me@example.com')`, [id]);
      await userDb.raw(
        `insert into sessions (id, user_id, token_hash, transport, expires_at) values ('ses_01jd8x4k3m5n6p7q8r9s0t1v3x', ?, '\\x01', 'bearer', now() + interval '1 day')`,
        [id],
      );
      const unknown = start(['disable-account', 'nobody@example.com'], env);
      expect((await withTimeout(unknown.exit, 15_000, 'disable-account to exit')).code).toBe(1);
      expect(unknown.stderr()).toContain('No account with the email nobody@example.com');

      const disabled = start(['disable-account', 'Disable-Me@example.com'], env);
      expect((await withTimeout(disabled.exit, 15_000, 'disable-account to exit')).code).toBe(0);
      expect(disabled.logs().find((l) => l.message === 'account disabled')).toMatchObject({ userId: id, sessionsRevoked: 1 });
      expect((await userDb('users').where({ id }).first()).disabled_at).not.toBeNull();
      expect((await userDb('sessions').where({ user_id: id }).first()).revoked_at).not.toBeNull();
      const [event] = await userDb('audit_events').where({ action: 'auth.account.disabled', target_id: id });
      expect(event).toMatchObject({ actor_kind: 'operator', data: { via: 'command_line', sessions_revoked: 1 } });

      const enabled = start(['enable-account', 'disable-me@example.com'], env);
      expect((await withTimeout(enabled.exit, 15_000, 'enable-account to exit')).code).toBe(0);
      expect((await userDb('users').where({ id }).first()).disabled_at).toBeNull();
      expect(await userDb('audit_events').where({ action: 'auth.account.enabled', target_id: id })).toHaveLength(1);
    } finally {
      await userDb.destroy();
    }
  });
});

// Behind a load balancer: after SIGTERM the instance keeps serving for SHUTDOWN_DELAY_MS with
// /readyz at 503, so the balancer's health checks take it out before its listener closes.
describe('SIGTERM with SHUTDOWN_DELAY_MS', () => {
  it('answers /readyz 503 at once, keeps accepting and serving (each answer closing its connection) for the delay, then drains and exits 0', async () => {
    const { port, env } = await serveEnv(databaseUrl(dbName));
    const proc = start(['serve'], { ...env, SHUTDOWN_DELAY_MS: '1500' });
    await waitFor('GET /readyz 200', async () => (await get(port, '/readyz')).status === 200, 20_000, proc);

    const signalled = Date.now();
    proc.child.kill('SIGTERM');
    const readiness = await waitFor('GET /readyz 503', async () => {
      const r = await get(port, '/readyz');
      return r.status === 503 ? r : null;
    }, 1_000, proc);
    expect(Date.now() - signalled).toBeLessThan(1_000);
    expect(readiness.body).toMatchObject({ code: 'unavailable', detail: expect.stringContaining('shutting down') });
    expect(readiness.headers['retry-after']).toBe('5');

    // Still serving, on new connections, until the delay is over.
    const ping = await get(port, '/v1/ping');
    expect(ping.status).toBe(200);
    expect(ping.headers.connection).toBe('close');
    expect(await tryConnect(port)).toBeNull();
    expect(proc.logs().map((l) => l.message)).toContain('shutting down: /readyz answers 503, still serving while load balancers take this instance out');

    await waitFor('the listener to close after the delay', async () => (await tryConnect(port)) === 'ECONNREFUSED', 5_000, proc);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(1_400);
    expect((await withTimeout(proc.exit, 10_000, 'the process to exit')).code).toBe(0);
  });
});

describe('serve with the database down at start', () => {
  it('stays up, logs the outage, answers health and ping, is not ready, and stops on SIGTERM', async () => {
    const { port, env } = await serveEnv(`postgres://postgres@127.0.0.1:${await freePort()}/none`);
    const proc = start(['serve'], env);
    await waitForLog(proc, 'listening', 15_000);
    const outage = await waitForLog(proc, 'database unreachable; requests that need it answer 503 until it is back', 5_000);
    expect(outage).toMatchObject({ level: 'error' });
    expect(outage.error).toMatch(/ECONNREFUSED|connect/i);

    // It keeps retrying (a second attempt logged) instead of exiting: no crash loop.
    const outageLine = 'database unreachable; requests that need it answer 503 until it is back';
    await waitFor('a second migration attempt', () => proc.logs().filter((l) => l.message === outageLine).length >= 2, 10_000, proc);
    expect(proc.child.exitCode).toBeNull();
    expect(proc.child.signalCode).toBeNull();

    expect((await get(port, '/healthz')).status).toBe(200);
    expect((await get(port, '/v1/ping')).status).toBe(200);
    const ready = await get(port, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.checks.database.ok).toBe(false);

    const { code } = await stopWithSigterm(proc);
    expect(code).toBe(0);
    expect(proc.logs().map((l) => l.message)).toContain('stopped');
  });
});
