// POST /v1/auth/verify-email and /verify-email/resend: codes mailed through `service.mail.send` to a
// real SMTP server, read from the received message and used; 15 minutes, single use, replaced by a
// newer one, dead after 5 wrong tries, stored only as an HMAC; resends limited to 3 per 15 minutes.
import type { TestApp } from '../support/test-app';
import { codeIn, startAppWithSmtp, type TestSmtpServer } from '../support/smtp';
import { PASSWORD } from '../support/accounts';
import { signedInUser } from '../support/users';

let t: TestApp;
let smtp: TestSmtpServer;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ t, smtp, close } = await startAppWithSmtp({ BCRYPT_COST: '4' }));
});
afterAll(() => close?.());

// The users are made directly (users.ts), not signed up through the API: a registration issues a
// code and mails it, and these tests count the codes and the mails from none.

/** The code of the `nth` (1-based) verification mail that reached the SMTP server for `email`. */
async function mailedCode(email: string, nth = 1): Promise<string> {
  const mine = () => smtp.messages.filter((m) => m.to.includes(email) && m.subject === 'Confirm your email address');
  await smtp.waitForMessage(() => mine().length >= nth);
  const message = mine()[nth - 1]!;
  expect(message.raw).toContain('within 15 minutes');
  return codeIn(message);
}

const resend = (auth: string) => t.http.post('/v1/auth/verify-email/resend').set('Authorization', auth);
const verify = (auth: string, code: string) => t.http.post('/v1/auth/verify-email').set('Authorization', auth).send({ code });
const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');
const audit = (action: string, userId: string) => t.ctx.db('audit_events').where({ action, target_id: userId }).orderBy('id');

it('mails a code that verifies the email: 200 User with email_verified true, audited; the code is stored only as an HMAC', async () => {
  const u = await signedInUser(t.ctx, { name: 'Ada Lovelace', password: PASSWORD });
  const sent = await resend(u.auth).expect(202);
  expect(sent.body).toEqual({ sent: true, expires_at: new Date(t.ctx.now().getTime() + 15 * 60_000).toISOString() });
  const code = await mailedCode(u.email);

  const [row] = await t.ctx.db('one_time_codes').where({ user_id: u.userId, purpose: 'verify_email' });
  expect(Buffer.isBuffer(row.code_hash) && row.code_hash.length).toBe(32);
  expect(row.code_hash.toString('utf8')).not.toContain(code);
  expect(row.code_hash.toString('hex')).not.toContain(Buffer.from(code).toString('hex'));

  const res = await verify(u.auth, code).expect(200);
  expect(res.body).toMatchObject({ id: u.userId, email: u.email, email_verified: true, name: 'Ada Lovelace', operator: false });
  expect((await t.ctx.db('users').where({ id: u.userId }).first()).email_verified_at).not.toBeNull();
  expect((await t.http.get('/v1/auth/me').set('Authorization', u.auth).expect(200)).body.email_verified).toBe(true);
  const [event] = await audit('auth.email.verified', u.userId);
  expect(event).toMatchObject({ actor_kind: 'user', actor_id: u.userId, request_id: res.headers['x-request-id'] });
  expect(await audit('auth.email.verification_sent', u.userId)).toHaveLength(1);

  // Verified now: both operations answer 409 already_verified.
  expect((await verify(u.auth, code).expect(409)).body.code).toBe('already_verified');
  expect((await resend(u.auth).expect(409)).body.code).toBe('already_verified');
});

it('a wrong code answers 401 invalid_code (audited), and the right code still works after fewer than 5 wrong tries', async () => {
  const u = await signedInUser(t.ctx, { name: 'Ada Lovelace', password: PASSWORD });
  await resend(u.auth).expect(202);
  const code = await mailedCode(u.email);
  for (let i = 0; i < 4; i++) {
    const res = await verify(u.auth, wrongCode(code)).expect(401);
    expect(res.body).toMatchObject({ code: 'invalid_code', detail: 'The code is wrong or has expired.' });
  }
  expect(await audit('auth.email.verification_failed', u.userId)).toHaveLength(4);
  await verify(u.auth, code).expect(200);
});

it('5 wrong tries kill the code: the right one then answers 401', async () => {
  const u = await signedInUser(t.ctx, { name: 'Ada Lovelace', password: PASSWORD });
  await resend(u.auth).expect(202);
  const code = await mailedCode(u.email);
  for (let i = 0; i < 5; i++) await verify(u.auth, wrongCode(code)).expect(401);
  expect((await verify(u.auth, code).expect(401)).body.code).toBe('invalid_code');
  expect((await t.ctx.db('users').where({ id: u.userId }).first()).email_verified_at).toBeNull();
  // A new code works again.
  await resend(u.auth).expect(202);
  await verify(u.auth, await mailedCode(u.email, 2)).expect(200);
});

it('a code expires after 15 minutes', async () => {
  const u = await signedInUser(t.ctx, { name: 'Ada Lovelace', password: PASSWORD });
  await resend(u.auth).expect(202);
  const code = await mailedCode(u.email);
  t.clock.advance(16 * 60_000);
  expect((await verify(u.auth, code).expect(401)).body.code).toBe('invalid_code');
});

it('a code is single use', async () => {
  const u = await signedInUser(t.ctx, { name: 'Ada Lovelace', password: PASSWORD });
  await resend(u.auth).expect(202);
  const code = await mailedCode(u.email);
  await verify(u.auth, code).expect(200);
  // Even if the address became unverified again, the used code proves nothing.
  await t.ctx.db('users').where({ id: u.userId }).update({ email_verified_at: null });
  expect((await verify(u.auth, code).expect(401)).body.code).toBe('invalid_code');
});

it('resend replaces the previous code: the old one no longer works, the new one does', async () => {
  const u = await signedInUser(t.ctx, { name: 'Ada Lovelace', password: PASSWORD });
  await resend(u.auth).expect(202);
  const first = await mailedCode(u.email, 1);
  await resend(u.auth).expect(202);
  const second = await mailedCode(u.email, 2);
  if (first !== second) expect((await verify(u.auth, first).expect(401)).body.code).toBe('invalid_code');
  await verify(u.auth, second).expect(200);
});

it('resend is limited to 3 per 15 minutes per email: 429 rate_limited with Retry-After', async () => {
  const u = await signedInUser(t.ctx, { name: 'Ada Lovelace', password: PASSWORD });
  for (let i = 0; i < 3; i++) await resend(u.auth).expect(202);
  const res = await resend(u.auth).expect(429);
  expect(res.body.code).toBe('rate_limited');
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(15 * 60);
  // Three codes were mailed, the refused request mailed none.
  await mailedCode(u.email, 3);
  expect(await t.ctx.db('one_time_codes').where({ user_id: u.userId, purpose: 'verify_email' })).toHaveLength(3);
  // Another address has its own budget.
  const other = await signedInUser(t.ctx, { name: 'Ada Lovelace', password: PASSWORD });
  await resend(other.auth).expect(202);
});

it('needs a session', async () => {
  expect((await t.http.post('/v1/auth/verify-email').send({ code: '123456' }).expect(401)).body.code).toBe('unauthenticated');
  await t.http.post('/v1/auth/verify-email/resend').expect(401);
});

it('validates the code against the contract (6 digits)', async () => {
  const u = await signedInUser(t.ctx, { name: 'Ada Lovelace', password: PASSWORD });
  const res = await verify(u.auth, '12345').expect(422);
  expect(res.body.errors[0].location).toBe('body.code');
  await verify(u.auth, 'abcdef').expect(422);
});

it('an already verified user gets 409 already_verified without a code being issued', async () => {
  const u = await signedInUser(t.ctx, { name: 'Ada Lovelace', password: PASSWORD, verified: true });
  expect((await verify(u.auth, '123456').expect(409)).body.code).toBe('already_verified');
  expect((await resend(u.auth).expect(409)).body.code).toBe('already_verified');
  expect(await t.ctx.db('one_time_codes').where({ user_id: u.userId })).toEqual([]);
});
