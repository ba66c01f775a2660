// GET /ops/system and GET /ops/auth/providers: the shapes, the release before and after this
// instance is recorded, job workers, configuration with every secret set to a recognisable value
// (none may appear), a frozen or dead Redis (and an unanswering database) reported unreachable in
// a prompt 200, and the sign-in methods with the names of what they still need.
import net from 'node:net';
import os from 'node:os';
import Redis from 'ioredis';
import { startTestApp, type TestApp } from '../support/test-app';
import { cloneTemplateDatabase, databaseUrl, dropDatabase } from '../support/databases';
import { PrivateRedis } from '../support/private-servers';
import { timed } from '../support/outages';
import { signedInUser } from '../support/users';
import { createDatabase } from '../../src/platform/database';
import { CHECK_BOUND_MS, describeSystem } from '../../src/system/info';
import { withoutCredentials } from '../../src/system/config-view';
import { describeSignInMethods } from '../../src/system/sign-in-methods';
import { setVariables } from '../../src/config/social-providers';

const SECRETS = {
  SESSION_SECRET: 'session-secret-RECOGNISABLE-0123456789abcdef',
  MFA_ENCRYPTION_KEY: Buffer.from('mfa-key-RECOGNISABLE-0123456789!').toString('base64'),
  SMTP_PASSWORD: 'smtp-password-RECOGNISABLE',
  DATABASE_PASSWORD: 'database-password-RECOGNISABLE',
  REDIS_PASSWORD: 'redis-password-RECOGNISABLE',
  PROVIDER_A_CLIENT_SECRET: 'provider-a-client-secret-RECOGNISABLE',
  PROVIDER_B_PRIVATE_KEY: '-----BEGIN PRIVATE KEY-----\nprovider-b-private-key-RECOGNISABLE\n-----END PRIVATE KEY-----',
};
/** Provider A complete; provider B without its team and key ids. */
const PROVIDER_ENV = {
  PROVIDER_A_ISSUER: 'https://a.example.com',
  PROVIDER_A_CLIENT_ID: 'web-client,ios-client',
  PROVIDER_A_CLIENT_SECRET: SECRETS.PROVIDER_A_CLIENT_SECRET,
  PROVIDER_B_ISSUER: 'https://b.example.com',
  PROVIDER_B_CLIENT_ID: 'com.example.web',
  PROVIDER_B_PRIVATE_KEY: SECRETS.PROVIDER_B_PRIVATE_KEY,
};

let redis: PrivateRedis;
let dbName: string;
let t: TestApp;
let operator: string;
let member: string;

/** The private Redis asks for a password, so the app's Redis URL carries one. */
async function requirePassword(): Promise<void> {
  const client = new Redis(redis.url, { lazyConnect: true });
  await client.connect();
  await client.config('SET', 'requirepass', SECRETS.REDIS_PASSWORD);
  client.disconnect();
}

beforeAll(async () => {
  redis = await PrivateRedis.start();
  await requirePassword();
  dbName = await cloneTemplateDatabase();
  // The shared server trusts local connections: the password is carried, never checked.
  const ownerUrl = new URL(databaseUrl(dbName));
  ownerUrl.password = SECRETS.DATABASE_PASSWORD;
  t = await startTestApp(
    {
      ...PROVIDER_ENV,
      SESSION_SECRET: SECRETS.SESSION_SECRET,
      MFA_ENCRYPTION_KEY: SECRETS.MFA_ENCRYPTION_KEY,
      SMTP_URL: `smtp://mailer:${SECRETS.SMTP_PASSWORD}@127.0.0.1:2525`,
      REDIS_URL: `redis://:${SECRETS.REDIS_PASSWORD}@127.0.0.1:${redis.port}`,
      OPERATOR_EMAILS: 'one@example.com,two@example.com',
      JOB_CONCURRENCY_MAIL: '3',
    },
    { databaseUrl: ownerUrl.toString() },
  );
  operator = (await signedInUser(t.ctx, { operator: true })).auth;
  member = (await signedInUser(t.ctx)).auth;
}, 60_000);

afterAll(async () => {
  await t?.ctx.instance.stop();
  await t?.close();
  await redis?.kill();
  if (dbName) await dropDatabase(dbName);
});

const system = async () => (await t.http.get('/ops/system').set('Authorization', operator).expect(200)).body;

describe('GET /ops/system', () => {
  it('describes this instance, its process and dependencies; the release as the build says until the instance is recorded', async () => {
    const body = await system();
    const identity = t.ctx.instance.identity;
    expect(body.instance).toEqual({ id: identity.id, hostname: os.hostname(), pid: process.pid, started_at: identity.startedAt.toISOString() });
    expect(t.ctx.instance.registered).toBe(false);
    expect(body.release).toEqual({
      id: expect.stringMatching(/^rel_[0-9a-z]{26}$/),
      version: t.ctx.config.build.version,
      commit: t.ctx.config.build.commit,
      built_at: null,
      first_seen_at: identity.startedAt.toISOString(),
      last_seen_at: t.clock.now.toISOString(),
    });
    expect(body.node).toBe(process.version);
    expect(Number.isInteger(body.uptime_seconds)).toBe(true);
    expect(body.memory.rss).toBeGreaterThan(body.memory.heap_used);
    expect(body.memory.heap_total).toBeGreaterThanOrEqual(body.memory.heap_used);
    expect(body.database).toEqual({ reachable: true, latency_ms: expect.any(Number), version: expect.stringMatching(/^\d+(\.\d+)?/) });
    expect(body.redis).toEqual({ reachable: true, latency_ms: expect.any(Number), version: expect.stringMatching(/^\d+\.\d+\.\d+$/) });
    expect(body.workers).toEqual({ running: false, queues: [] });
  });

  it('shows the release as recorded once this instance is', async () => {
    await t.ctx.instance.start();
    const body = await system();
    const row = await t.ctx.db('releases').where({ id: body.release.id }).first();
    expect(row).toBeDefined();
    expect(body.release).toEqual({
      id: row.id,
      version: row.version,
      commit: row.commit,
      built_at: null,
      first_seen_at: row.first_seen_at.toISOString(),
      last_seen_at: row.last_seen_at.toISOString(),
    });
  });

  it('shows the configuration without credentials, secrets only as set or unset', async () => {
    const { config } = await system();
    expect(config).toMatchObject({
      node_env: 'test',
      database_url: `postgres://127.0.0.1:5432/${dbName}`,
      redis_url: `redis://127.0.0.1:${redis.port}`,
      redis_command_timeout_ms: 10_000,
      database_pool_max: 10,
      mail_transport: 'smtp',
      mail_host: '127.0.0.1',
      mail_port: 2525,
      job_concurrency_mail: 3,
      operator_emails_count: 2,
      workers_enabled: true,
      build_version: t.ctx.config.build.version,
      session_secret: 'set',
      mfa_encryption_key: 'set',
      smtp_credentials: 'set',
      provider_a_client_secret: 'set',
      provider_b_private_key: 'set',
      provider_b_team_id: 'unset',
    });
  });

  it('never shows a secret value, in any encoding', async () => {
    const text = JSON.stringify(await system()) + JSON.stringify((await t.http.get('/ops/auth/providers').set('Authorization', operator).expect(200)).body);
    const mfaKey = Buffer.from(SECRETS.MFA_ENCRYPTION_KEY, 'base64');
    const forms = Object.values(SECRETS).flatMap((s) => [s, encodeURIComponent(s), JSON.stringify(s).slice(1, -1)]);
    for (const form of [...forms, mfaKey.toString('hex'), mfaKey.toString('base64url'), 'RECOGNISABLE']) expect(text).not.toContain(form);
    expect(text).not.toContain('mailer'); // the SMTP user
  });

  it('lists the queues its workers take jobs from, with their concurrency, once they run', async () => {
    await t.ctx.jobs.startWorkers();
    expect((await system()).workers).toEqual({
      running: true,
      queues: [
        { name: 'default', concurrency: t.ctx.config.jobConcurrency.default },
        { name: 'mail', concurrency: 3 },
        { name: 'maintenance', concurrency: t.ctx.config.jobConcurrency.maintenance },
      ],
    });
  });

  it('answers 200 promptly with Redis frozen, then dead, reporting it unreachable', async () => {
    const unreachable = { reachable: false, latency_ms: null, version: null };
    redis.pause();
    try {
      const frozen = await timed(() => t.http.get('/ops/system').set('Authorization', operator));
      expect(frozen.status).toBe(200);
      expect(frozen.ms).toBeLessThan(CHECK_BOUND_MS + 2_500); // the client's own command timeout is 10 s
      expect(frozen.body.redis).toEqual(unreachable);
      expect(frozen.body.database.reachable).toBe(true);
    } finally {
      redis.resume();
    }
    await redis.kill();
    try {
      const dead = await timed(() => t.http.get('/ops/system').set('Authorization', operator));
      expect(dead.status).toBe(200);
      expect(dead.ms).toBeLessThan(CHECK_BOUND_MS + 2_500);
      expect(dead.body.redis).toEqual(unreachable);
    } finally {
      await redis.start();
      await requirePassword();
    }
  }, 30_000);

  it('reports a database that accepts connections but never answers as unreachable, within the bound', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => void sockets.push(socket)); // accepts, never says a word
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    // Its own connect timeout is three times the bound.
    const db = createDatabase(`postgres://postgres@127.0.0.1:${port}/none`, 1, undefined, { connectMs: 3 * CHECK_BOUND_MS });
    try {
      const start = Date.now();
      const info = await describeSystem({ ...t.ctx, db });
      expect(Date.now() - start).toBeLessThan(2 * CHECK_BOUND_MS);
      expect(info.database).toEqual({ reachable: false, latencyMs: null, version: null });
    } finally {
      for (const socket of sockets) socket.destroy();
      await db.destroy().catch(() => undefined);
      await new Promise((resolve) => silent.close(resolve));
    }
  }, 20_000);
});

describe('GET /ops/auth/providers', () => {
  it('lists every method in order, the providers with the names of what they still need; a configured provider is available', async () => {
    const res = await t.http.get('/ops/auth/providers').set('Authorization', operator).expect(200);
    expect(res.body).toEqual({
      items: [
        { method: 'password', used_for: ['sign_in'], enabled: true, configured: true, available: true, missing: [] },
        { method: 'passkey', used_for: ['sign_in', 'second_factor'], enabled: true, configured: true, available: true, missing: [] },
        { method: 'totp', used_for: ['second_factor'], enabled: true, configured: true, available: true, missing: [] },
        { method: 'provider_a', used_for: ['sign_in'], enabled: true, configured: true, available: true, missing: [] },
        { method: 'provider_b', used_for: ['sign_in'], enabled: true, configured: false, available: false, missing: ['PROVIDER_B_TEAM_ID', 'PROVIDER_B_KEY_ID'] },
      ],
      next_cursor: null,
    });
  });

  it('a provider with nothing set is off and needs everything; blanks count as unset; production TOTP needs its key', () => {
    const methods = describeSignInMethods({ env: 'production', variablesSet: setVariables({ PROVIDER_A_ISSUER: '  ', SESSION_SECRET: 'x' }) });
    const byName = Object.fromEntries(methods.map((m) => [m.method, m]));
    expect(byName.provider_a).toEqual({
      method: 'provider_a',
      usedFor: ['sign_in'],
      enabled: false,
      configured: false,
      available: false,
      missing: ['PROVIDER_A_ISSUER', 'PROVIDER_A_CLIENT_ID', 'PROVIDER_A_CLIENT_SECRET'],
    });
    expect(byName.provider_b!.missing).toHaveLength(5);
    expect(byName.totp).toMatchObject({ configured: false, available: false, missing: ['MFA_ENCRYPTION_KEY'] });
    // Outside production a key is derived.
    expect(describeSignInMethods({ env: 'development', variablesSet: new Set() }).find((m) => m.method === 'totp')).toMatchObject({ configured: true, missing: [] });
  });
});

describe('connection strings', () => {
  it('lose user, password and every query parameter but sslmode and host', () => {
    expect(withoutCredentials('postgres://app:pw@db.internal:5432/tenant?password=pw&sslmode=require&sslkey=/k')).toBe('postgres://db.internal:5432/tenant?sslmode=require');
    expect(withoutCredentials('rediss://default:pw@cache:6380/0#x')).toBe('rediss://cache:6380/0');
    expect(withoutCredentials('not a url pw')).toBe('invalid url');
  });
});

describe('operators only', () => {
  it.each(['/ops/system', '/ops/auth/providers'])('%s: 401 anonymous, 403 not an operator', async (url) => {
    expect((await t.http.get(url).expect(401)).body.code).toBe('unauthenticated');
    expect((await t.http.get(url).set('Authorization', member).expect(403)).body.code).toBe('forbidden');
  });
});
