import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { exampleRequest } from '../support/examples';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ APP_ORIGINS: 'https://app.example.com' });
});
afterAll(() => t.close());

const protectedOps = () => [...t.ctx.contract.operations.values()].filter((op) => !op.public);

it('answers 401 unauthenticated on every protected operation without a session', async () => {
  expect(protectedOps().length).toBeGreaterThan(60);
  for (const op of protectedOps()) {
    const req = exampleRequest(t.ctx.contract, op);
    const res = await (t.http as any)[op.method](req.url).send(req.body);
    expect({ op: op.operationId, status: res.status }).toEqual({ op: op.operationId, status: 401 });
    expect(res.body.code).toBe('unauthenticated');
  }
});

it('answers 401 before validating the body (no information for anonymous callers)', async () => {
  const res = await t.http.post('/ops/mail/test').send({ to: 'not an email' }).expect(401);
  expect(res.body.code).toBe('unauthenticated');
});

it('does not even read the body of an anonymous request to a protected operation', async () => {
  const broken = await t.http.post('/ops/mail/test').set('Content-Type', 'application/json').send('{"to": ').expect(401);
  expect(broken.body.code).toBe('unauthenticated');
  const huge = await t.http.put('/v1/auth/password').set('Content-Type', 'application/json').send(`{"x": "${'a'.repeat(1_100_000)}"}`).expect(401);
  expect(huge.body.code).toBe('unauthenticated');
});

it('refuses garbage, unknown, revoked and expired tokens', async () => {
  await t.http.get('/v1/auth/me').set('Authorization', 'Bearer nope').expect(401);
  await t.http.get('/v1/auth/me').set('Authorization', `Bearer ${'a'.repeat(43)}`).expect(401);

  const revoked = await signedInUser(t.ctx);
  await t.http.get('/v1/auth/me').set('Authorization', revoked.auth).expect(200);
  await t.ctx.db('sessions').where({ id: revoked.sessionId }).update({ revoked_at: new Date() });
  await t.http.get('/v1/auth/me').set('Authorization', revoked.auth).expect(401);

  const idle = await signedInUser(t.ctx);
  t.clock.advance(t.ctx.services.sessions.policy.idleTimeoutSeconds * 1000 + 1000);
  await t.http.get('/v1/auth/me').set('Authorization', idle.auth).expect(401);
});

it('refuses a session past its absolute lifetime even when recently seen', async () => {
  const user = await signedInUser(t.ctx);
  t.clock.advance(t.ctx.config.session.absoluteLifetimeSeconds * 1000 + 1000);
  await t.ctx.db('sessions').where({ id: user.sessionId }).update({ last_seen_at: t.clock.now });
  await t.http.get('/v1/auth/me').set('Authorization', user.auth).expect(401);
});

describe('/ops', () => {
  it('answers 403 to signed-in users who are not operators', async () => {
    const user = await signedInUser(t.ctx);
    const res = await t.http.get('/ops/jobs/runs').set('Authorization', user.auth).expect(403);
    expect(res.body.code).toBe('forbidden');
  });

  it('lets operators through', async () => {
    const op = await signedInUser(t.ctx, { operator: true });
    await t.http.get('/ops/jobs/runs').set('Authorization', op.auth).expect(200);
  });

  it('does not accept the session cookie (bearer only), and says so in the 401', async () => {
    // The hint goes with every bearer-only operation (router.ts → unauthenticatedDetail), and those are the /ops ones.
    const ops = [...t.ctx.contract.operations.values()].filter((o) => o.path.startsWith('/ops/'));
    expect(ops.filter((o) => JSON.stringify(o.security) !== JSON.stringify([{ bearerAuth: ['operator'] }])).map((o) => o.operationId)).toEqual([]);
    const op = await signedInUser(t.ctx, { operator: true, transport: 'cookie' });
    const read = await t.http.get('/ops/jobs/runs').set('Cookie', `session=${op.token}`).expect(401);
    expect(read.body.code).toBe('unauthenticated');
    expect(read.body.detail).toMatch(/^Operator endpoints \(\/ops\) take a bearer token, not the session cookie/);
    expect(read.body.detail).toContain('Authorization: Bearer <token>');
    // An unsafe method too: 401 with the hint, not the CSRF 403 a cookie request would get elsewhere.
    const write = await t.http.post('/ops/mail/test').set('Cookie', `session=${op.token}`).set('Origin', 'https://app.example.com').send({ to: 'ops@example.com' }).expect(401);
    expect(write.body).toMatchObject({ code: 'unauthenticated', detail: read.body.detail });
    // Whatever the cookie holds: the hint is about the kind of credential, not its validity.
    expect((await t.http.get('/ops/jobs/runs').set('Cookie', 'session=stale').expect(401)).body.detail).toBe(read.body.detail);
  });

  it('keeps the plain 401 without a cookie, and a bearer token sent with a cookie is used', async () => {
    const anonymous = await t.http.get('/ops/jobs/runs').expect(401);
    expect(anonymous.body).toMatchObject({ code: 'unauthenticated', detail: 'Sign in to use this operation.' });
    const op = await signedInUser(t.ctx, { operator: true });
    await t.http.get('/ops/jobs/runs').set('Authorization', op.auth).set('Cookie', 'session=whatever').expect(200);
    // Cookies of other names are not the session.
    expect((await t.http.get('/ops/jobs/runs').set('Cookie', 'theme=dark').expect(401)).body.detail).toBe('Sign in to use this operation.');
  });
});

describe('Authorization scheme name', () => {
  it('is case-insensitive (RFC 9110): bearer, BEARER and Bearer are the same scheme', async () => {
    const user = await signedInUser(t.ctx);
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      const res = await t.http.get('/v1/auth/me').set('Authorization', `${scheme} ${user.token}`);
      expect({ scheme, status: res.status }).toEqual({ scheme, status: 200 });
    }
    const op = await signedInUser(t.ctx, { operator: true });
    await t.http.get('/ops/jobs/runs').set('Authorization', `bearer ${op.token}`).expect(200);
  });

  it('still needs the scheme, one space and a token', async () => {
    const user = await signedInUser(t.ctx);
    for (const header of [user.token, `Bearer${user.token}`, `Basic ${user.token}`, `Bearers ${user.token}`, 'Bearer ', 'bearer    ']) {
      const res = await t.http.get('/v1/auth/me').set('Authorization', header);
      expect({ header, status: res.status }).toEqual({ header, status: 401 });
    }
  });
});

describe('session cookie', () => {
  it('authenticates by cookie, and a bearer token is not accepted as a cookie', async () => {
    const cookieUser = await signedInUser(t.ctx, { transport: 'cookie' });
    await t.http.get('/v1/auth/me').set('Cookie', `session=${cookieUser.token}`).expect(200);
    const bearerUser = await signedInUser(t.ctx);
    await t.http.get('/v1/auth/me').set('Cookie', `session=${bearerUser.token}`).expect(401);
  });

  it('refuses unsafe cookie requests from a foreign origin (CSRF) and accepts allowed ones', async () => {
    const user = await signedInUser(t.ctx, { transport: 'cookie' });
    const cookie = `session=${user.token}`;
    const foreign = await t.http.post('/v1/auth/logout').set('Cookie', cookie).set('Origin', 'https://evil.example').expect(403);
    expect(foreign.body.code).toBe('forbidden');
    await t.http.post('/v1/auth/logout').set('Cookie', cookie).expect(403); // no Origin, no Referer
    await t.http.post('/v1/auth/logout').set('Cookie', cookie).set('Origin', 'https://app.example.com').expect(204);
    const other = await signedInUser(t.ctx, { transport: 'cookie' });
    await t.http.post('/v1/auth/logout').set('Cookie', `session=${other.token}`).set('Referer', 'https://app.example.com/settings').expect(204);
  });

  it('does not apply the origin check to bearer requests', async () => {
    const user = await signedInUser(t.ctx);
    await t.http.post('/v1/auth/logout').set('Authorization', user.auth).set('Origin', 'https://evil.example').expect(204);
  });
});
