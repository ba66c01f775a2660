// Answers under /v1/auth/ and /ops/ carry Cache-Control: no-store, errors included. (The test
// client's contract validator checks it on every response of every test; these name the cases.)
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ RATE_LIMIT_IP_PER_MINUTE: '3', TRUST_PROXY: 'true' });
});
afterAll(() => t.close());

const noStore = (res: { headers: Record<string, string | undefined> }) => res.headers['cache-control'];

it('on successes and errors of authentication operations', async () => {
  const user = await signedInUser(t.ctx);
  const ip = { 'X-Forwarded-For': '203.0.113.60' };
  expect(noStore(await t.http.get('/v1/auth/me').set(ip).set('Authorization', user.auth).expect(200))).toBe('no-store');
  expect(noStore(await t.http.get('/v1/auth/me').set(ip).expect(401))).toBe('no-store');
  expect(noStore(await t.http.post('/v1/auth/login').set(ip).send({ email: 'not an email' }).expect(422))).toBe('no-store');
  // The per-IP ceiling answers before any route is matched.
  expect(noStore(await t.http.post('/v1/auth/login').set(ip).send({ email: 'a@example.com', password: 'whatever' }).expect(429))).toBe('no-store');
});

it('on /ops answers, including 403 and 405', async () => {
  const user = await signedInUser(t.ctx);
  const operator = await signedInUser(t.ctx, { operator: true });
  const ip = { 'X-Forwarded-For': '203.0.113.61' };
  expect(noStore(await t.http.get('/ops/jobs/runs').set(ip).set('Authorization', operator.auth).expect(200))).toBe('no-store');
  expect(noStore(await t.http.get('/ops/jobs/runs').set(ip).set('Authorization', user.auth).expect(403))).toBe('no-store');
  expect(noStore(await t.http.delete('/ops/jobs/runs').set(ip).set('Authorization', operator.auth).expect(405))).toBe('no-store');
});

it('not elsewhere', async () => {
  const res = await t.http.get('/v1/ping').set('X-Forwarded-For', '203.0.113.62').expect(200);
  expect(res.headers['cache-control']).toBeUndefined();
});
