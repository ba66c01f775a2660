// The daily cap on wrong one-time codes per account (RATE_LIMIT_CODE_FAILURES_PER_DAY, here 3):
// past it, verification and reset answer 429 until the day's window passes, even for the right
// code, and the first refusal is audited. Unknown addresses are capped alike (no enumeration).
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ BCRYPT_COST: '4', RATE_LIMIT_CODE_FAILURES_PER_DAY: '3', RATE_LIMIT_EMAIL_PER_15_MINUTES: '100' });
});
afterAll(() => t.close());

const capped = (userId: string) => t.ctx.db('audit_events').where({ action: 'auth.code.attempts_capped', target_id: userId });

it('verify-email: 3 wrong codes answer 401, then 429 with Retry-After for a day, audited once', async () => {
  const u = await signedInUser(t.ctx);
  await t.http.post('/v1/auth/verify-email/resend').set('Authorization', u.auth).expect(202);
  for (let i = 0; i < 3; i++) {
    const res = await t.http.post('/v1/auth/verify-email').set('Authorization', u.auth).send({ code: '000000' }).expect(401);
    expect(res.body.code).toBe('invalid_code');
  }
  for (let i = 0; i < 2; i++) {
    const res = await t.http.post('/v1/auth/verify-email').set('Authorization', u.auth).send({ code: '000000' }).expect(429);
    expect(res.body.code).toBe('rate_limited');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(15 * 60);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(24 * 3600);
  }
  const events = await capped(u.userId);
  expect(events).toHaveLength(1);
  expect(events[0].data).toEqual({ purpose: 'verify_email', max_failures_per_day: 3 });
});

it('password reset: the cap holds for the right code too, and for unknown addresses alike', async () => {
  const u = await signedInUser(t.ctx);
  const unknown = `nobody-${Date.now()}@example.com`;
  const reset = (email: string, code: string) => t.http.post('/v1/auth/password/reset').send({ email, code, new_password: 'purple elephant riding a bicycle' });
  for (const email of [u.email, unknown]) {
    for (let i = 0; i < 3; i++) expect((await reset(email, '000000').expect(401)).body.code).toBe('invalid_code');
    expect((await reset(email, '000000').expect(429)).body.code).toBe('rate_limited');
  }
  // A code issued now is right, and still refused while the cap lasts.
  const { code } = await t.ctx.services.codes.issue(u.userId, 'password_reset');
  expect((await reset(u.email, code).expect(429)).body.code).toBe('rate_limited');
  expect(await capped(u.userId)).toHaveLength(1);
});

it('a right code does not count against the cap', async () => {
  const u = await signedInUser(t.ctx);
  const reset = (code: string) => t.http.post('/v1/auth/password/reset').send({ email: u.email, code, new_password: 'purple elephant riding a bicycle' });
  await reset('000000').expect(401);
  await reset('000000').expect(401);
  const { code } = await t.ctx.services.codes.issue(u.userId, 'password_reset');
  await reset(code).expect(204);
  await reset('000000').expect(401); // the third failure, not the fourth attempt
  await reset('000000').expect(429);
});
