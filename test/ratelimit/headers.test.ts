// RateLimit-Policy and RateLimit headers (IETF httpapi draft, structured fields) on the operations
// that count named limits: the budget of each limit the request counted against and what is left,
// on success and on errors, beside Retry-After on 429; refunds and resets show.
import { startTestApp, type TestApp } from '../support/test-app';
import { insertUser } from '../../src/accounts/store';
import { hashPassword } from '../../src/accounts/passwords';
import { signedInUser } from '../support/users';
import { reportsLimits } from '../../src/http/rate-limit-headers';

const PASSWORD = 'correct horse battery staple';
let t: TestApp;
let seq = 0;
beforeAll(async () => {
  t = await startTestApp({ BCRYPT_COST: '4', TRUST_PROXY: 'true', RATE_LIMIT_LOGIN_PER_MINUTE: '3', RATE_LIMIT_EMAIL_PER_15_MINUTES: '2' });
});
afterAll(() => t?.close());

async function account() {
  const email = `limits${++seq}-${Date.now()}@example.com`;
  const userId = await insertUser(t.ctx.db, { email, name: 'Ada', passwordHash: await hashPassword(PASSWORD, 4) });
  return { email, userId };
}

/** `"name";k=v;k=v, …` → { name: { k: v } } */
function items(field: string | undefined): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const item of (field ?? '').split(', ').filter(Boolean)) {
    const [name, ...params] = item.split(';');
    out[JSON.parse(name!)] = Object.fromEntries(params.map((p) => [p.split('=')[0], Number(p.split('=')[1])]));
  }
  return out;
}

it('gives the contract the operations that count named limits, and only those', () => {
  const reporting = [...t.ctx.contract.operations.values()].filter((op) => reportsLimits(t.ctx.contract, op)).map((op) => op.operationId);
  expect(reporting.sort()).toEqual(
    [
      'changePassword',
      'createInvitation',
      'deleteMe',
      'deletePasskey',
      'disableTotp',
      'forgotPassword',
      'login',
      'passkeyLogin',
      'providerAToken',
      'providerBToken',
      'regenerateRecoveryCodes',
      'register',
      'resendInvitation',
      'resendVerificationEmail',
      'resetPassword',
      'verifyEmail',
    ].sort(),
  );
});

describe('sign-in (login.ip and login.email, 3 a minute)', () => {
  it('says what is left after each attempt, on 401 and 200, and that nothing is on the 429', async () => {
    const { email } = await account();
    const ip = '198.51.100.7';
    const wrong = await t.http.post('/v1/auth/login').set('X-Forwarded-For', ip).send({ email, password: 'wrong password here' }).expect(401);
    expect(items(wrong.headers['ratelimit-policy'])).toEqual({ 'login.ip': { q: 3, w: 60 }, 'login.email': { q: 3, w: 60 } });
    const first = items(wrong.headers.ratelimit);
    expect(first['login.ip']!.r).toBe(2);
    expect(first['login.email']!.r).toBe(2);
    expect(first['login.ip']!.t).toBeGreaterThan(0);
    expect(first['login.ip']!.t).toBeLessThanOrEqual(60);

    const right = await t.http.post('/v1/auth/login').set('X-Forwarded-For', ip).send({ email, password: PASSWORD, transport: 'bearer' }).expect(200);
    expect(items(right.headers.ratelimit)).toMatchObject({ 'login.ip': { r: 1 }, 'login.email': { r: 1 } });

    await t.http.post('/v1/auth/login').set('X-Forwarded-For', ip).send({ email, password: 'wrong password here' }).expect(401);
    const refused = await t.http.post('/v1/auth/login').set('X-Forwarded-For', ip).send({ email, password: PASSWORD }).expect(429);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    const spent = items(refused.headers.ratelimit);
    expect(spent).toMatchObject({ 'login.ip': { r: 0 }, 'login.email': { r: 0 } });
    expect(Math.max(spent['login.ip']!.t!, spent['login.email']!.t!)).toBe(retryAfter);
    expect(refused.headers['ratelimit-policy']).toBe('"login.ip";q=3;w=60, "login.email";q=3;w=60');
  });

  it('sends none when the request was refused before anything was counted', async () => {
    const res = await t.http.post('/v1/auth/login').set('X-Forwarded-For', '198.51.100.8').send({ email: 'not an address' }).expect(422);
    expect(res.headers.ratelimit).toBeUndefined();
    expect(res.headers['ratelimit-policy']).toBeUndefined();
  });

  it('gives back the attempt of a right current password (changePassword)', async () => {
    const user = await signedInUser(t.ctx);
    await t.ctx.db('users').where({ id: user.userId }).update({ password_hash: await hashPassword(PASSWORD, 4) });
    const res = await t.http.put('/v1/auth/password').set('Authorization', user.auth).send({ current_password: PASSWORD, new_password: 'another long passphrase 42' }).expect(200);
    expect(res.headers['ratelimit-policy']).toBe('"login.email";q=3;w=60');
    expect(items(res.headers.ratelimit)['login.email']!.r).toBe(3);
  });
});

it('names the per-address limit of forgot-password (2 per 15 minutes), for any address', async () => {
  const email = `nobody${Date.now()}@example.com`;
  const first = await t.http.post('/v1/auth/password/forgot').send({ email }).expect(202);
  expect(first.headers['ratelimit-policy']).toBe('"password_forgot.email";q=2;w=900');
  expect(items(first.headers.ratelimit)['password_forgot.email']!.r).toBe(1);
  const second = await t.http.post('/v1/auth/password/forgot').send({ email }).expect(202);
  expect(items(second.headers.ratelimit)['password_forgot.email']!.r).toBe(0);
  const refused = await t.http.post('/v1/auth/password/forgot').send({ email }).expect(429);
  expect(items(refused.headers.ratelimit)['password_forgot.email']).toEqual({ r: 0, t: Number(refused.headers['retry-after']) });
});

it('sends none on operations that count no named limit', async () => {
  const user = await signedInUser(t.ctx);
  const res = await t.http.get('/v1/auth/me').set('Authorization', user.auth).expect(200);
  expect(res.headers.ratelimit).toBeUndefined();
  expect(res.headers['ratelimit-policy']).toBeUndefined();
});
