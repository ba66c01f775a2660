import { startTestApp, type TestApp } from '../support/test-app';
import { freePort } from '../support/ports';
import { signedInUser } from '../support/users';
import { createDatabase } from '../../src/platform/database';

/** The body without its request id (random characters that may hold any digits). */
const bodyText = (body: Record<string, unknown>) => JSON.stringify({ ...body, request_id: undefined });

describe('with Redis unreachable', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    t = await startTestApp({ REDIS_URL: `redis://127.0.0.1:${port}` });
  });
  afterAll(() => t.close());

  it('readyz answers 503 naming Redis, and healthz stays 200', async () => {
    const res = await t.http.get('/readyz').expect(503);
    expect(res.body).toMatchObject({ code: 'unavailable', status: 503 });
    expect(res.body.checks.database.ok).toBe(true);
    expect(res.body.checks.redis).toEqual({ ok: false, latency_ms: null, error: 'unreachable' });
    // Which dependency is down, not the driver's message (no host, port or errno).
    expect(bodyText(res.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|connect|Stream|enableOfflineQueue/);
    expect(bodyText(res.body)).not.toContain(String(port));
    expect(res.headers['retry-after']).toBe('5');
    await t.http.get('/healthz').expect(200);
  });
});

describe('with the database unreachable', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('answers 503 unavailable, not 500, on operations that need it', async () => {
    const user = await signedInUser(t.ctx, { operator: true });
    await t.ctx.db.destroy();
    t.ctx.db = createDatabase(`postgres://postgres@127.0.0.1:${await freePort()}/none`, 1);
    const res = await t.http.get('/ops/jobs/runs').set('Authorization', user.auth).expect(503);
    expect(res.body).toMatchObject({ code: 'unavailable' });
    expect(res.headers['retry-after']).toBeDefined();
    const ready = await t.http.get('/readyz').expect(503);
    expect(ready.body.checks.database).toEqual({ ok: false, latency_ms: null, error: 'unreachable' });
    expect(bodyText(ready.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|none|postgres/);
  });

  it('answers 503 while migrations have not run yet', async () => {
    t.ctx.state.databaseReady = false;
    const res = await t.http.get('/v1/auth/me').expect(503);
    expect(res.body.code).toBe('unavailable');
    await t.http.get('/v1/ping').expect(200);
  });
});
