// PUT /v1/auth/password, POST /v1/auth/password/forgot and /password/reset. Reset codes are read from
// the mail received by a real SMTP server; sessions are refused at once after a change or reset.
import type { TestApp } from '../support/test-app';
import { codeIn, startAppWithSmtp, type TestSmtpServer } from '../support/smtp';
import { verifyPassword } from '../../src/accounts/passwords';
import { PASSWORD, signUp } from '../support/accounts';
import { signedInUser } from '../support/users';
import { waitFor } from '../support/wait';

const NEW_PASSWORD = 'purple elephant riding a bicycle';

let t: TestApp;
let smtp: TestSmtpServer;
let close: () => Promise<void>;
beforeAll(async () => {
  // Accounts are signed up through the API (accounts.ts), with PASSWORD; one without a password is
  // made directly (users.ts), the API makes those only through a provider's sign-up.
  ({ t, smtp, close } = await startAppWithSmtp({ BCRYPT_COST: '4', RATE_LIMIT_REGISTER_PER_MINUTE: '1000' }));
});
afterAll(() => close?.());

let n = 0;

const storedHash = async (userId: string) => (await t.ctx.db('users').where({ id: userId }).first()).password_hash as string | null;
const audit = (action: string, userId: string) => t.ctx.db('audit_events').where({ action, target_id: userId }).orderBy('id');
const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');
const mailsTo = (email: string, subject: RegExp) => smtp.messages.filter((m) => m.to.includes(email) && subject.test(m.subject));

/** GET /v1/auth/me answers 200 for a live session, 401 for a revoked one. */
async function expectSession(auth: string, live: boolean): Promise<void> {
  await t.http.get('/v1/auth/me').set('Authorization', auth).expect(live ? 200 : 401);
}

/** The code of the `nth` (1-based) password reset mail for `email`. */
async function resetCode(email: string, nth = 1): Promise<string> {
  await smtp.waitForMessage(() => mailsTo(email, /^Reset your password$/).length >= nth);
  const message = mailsTo(email, /^Reset your password$/)[nth - 1]!;
  expect(message.raw).toContain('valid for 15 minutes');
  return codeIn(message);
}

// ----- change ----------------------------------------------------------------------------------

describe('PUT /v1/auth/password', () => {
  const change = (auth: string, current_password: string, new_password: string) =>
    t.http.put('/v1/auth/password').set('Authorization', auth).send({ current_password, new_password });

  it('changes the password, revokes every OTHER session (this one keeps working), mails a notice, audits', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace', sessions: 3 });
    const res = await change(u.auth, PASSWORD, NEW_PASSWORD).expect(200);
    expect(res.body).toEqual({ revoked_sessions: 2 });

    await expectSession(u.sessions[0]!.auth, true);
    await expectSession(u.sessions[1]!.auth, false);
    await expectSession(u.sessions[2]!.auth, false);

    const hash = (await storedHash(u.userId))!;
    expect(await verifyPassword(NEW_PASSWORD, hash)).toBe(true);
    expect(await verifyPassword(PASSWORD, hash)).toBe(false);

    const [event] = await audit('auth.password.changed', u.userId);
    expect(event).toMatchObject({ actor_kind: 'user', actor_id: u.userId, request_id: res.headers['x-request-id'] });
    expect(event.data).toEqual({ revoked_sessions: 2 });
    const notice = await smtp.waitForMessage((m) => m.to.includes(u.email) && m.subject === 'Your password was changed');
    expect(notice.raw).toContain('Every other signed-in device was signed out');
  });

  it('a wrong current password answers 401 invalid_credentials and changes nothing', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace', sessions: 2 });
    const before = await storedHash(u.userId);
    const res = await change(u.auth, 'not my password', NEW_PASSWORD).expect(401);
    expect(res.body.code).toBe('invalid_credentials');
    expect(await storedHash(u.userId)).toBe(before);
    await expectSession(u.sessions[1]!.auth, true);
    expect(await audit('auth.password.changed', u.userId)).toEqual([]);
  });

  it('a too common new password answers 422 password_too_common at body.new_password', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    const res = await change(u.auth, PASSWORD, 'iloveyou').expect(422);
    expect(res.body).toMatchObject({ code: 'password_too_common', errors: [{ message: 'is among the most common passwords', location: 'body.new_password' }] });
    expect(await verifyPassword(PASSWORD, (await storedHash(u.userId))!)).toBe(true);
    // Too short is the contract's own validation.
    expect((await change(u.auth, PASSWORD, 'short').expect(422)).body.errors[0].location).toBe('body.new_password');
  });

  it('keeps passwords longer than 72 bytes whole', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    const long = `${'x'.repeat(80)}-tail-one`;
    await change(u.auth, PASSWORD, long).expect(200);
    const hash = (await storedHash(u.userId))!;
    expect(await verifyPassword(long, hash)).toBe(true);
    expect(await verifyPassword(`${'x'.repeat(80)}-tail-two`, hash)).toBe(false);
  });

  it('an account without a password answers 409 password_not_set', async () => {
    const u = await signedInUser(t.ctx, { name: 'Ada Lovelace' });
    expect((await change(u.auth, PASSWORD, NEW_PASSWORD).expect(409)).body.code).toBe('password_not_set');
  });

  it('wrong current passwords count towards the sign-in limit (10 per minute per email): then 429 with Retry-After', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    for (let i = 0; i < 10; i++) await change(u.auth, `wrong password ${i}`, NEW_PASSWORD).expect(401);
    const res = await change(u.auth, PASSWORD, NEW_PASSWORD).expect(429);
    expect(res.body.code).toBe('rate_limited');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(await verifyPassword(PASSWORD, (await storedHash(u.userId))!)).toBe(true);
  });

  it('needs a session', async () => {
    await t.http.put('/v1/auth/password').send({ current_password: PASSWORD, new_password: NEW_PASSWORD }).expect(401);
  });
});

// ----- forgot ----------------------------------------------------------------------------------

describe('POST /v1/auth/password/forgot', () => {
  const forgot = (email: string) => t.http.post('/v1/auth/password/forgot').send({ email });

  it('answers 202 with the same body for known and unknown addresses; only the known one gets a mail', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    const unknown = `nobody${++n}-${Date.now()}@example.com`;
    const known = await forgot(u.email).expect(202);
    const missing = await forgot(unknown).expect(202);
    expect(known.body).toEqual({ accepted: true, code_expires_in: 900 });
    expect(missing.body).toEqual(known.body);
    expect(Object.keys(missing.headers).sort()).toEqual(Object.keys(known.headers).sort());

    await resetCode(u.email);
    const [event] = await audit('auth.password.reset_requested', u.userId);
    expect(event.request_id).toBe(known.headers['x-request-id']);
    // The unknown address: its request's run completes having queued no mail and audited nothing.
    const run = await t.ctx.db('job_runs').where({ kind: 'service.auth.password_reset', request_id: missing.headers['x-request-id'] }).first();
    await waitFor('the unknown address run to complete', async () => (await t.ctx.db('job_runs').where({ id: run.id }).first()).state === 'completed');
    const mailRuns = await t.ctx.db('job_runs').where({ kind: 'service.mail.send' });
    expect(mailRuns.filter((r: any) => r.payload.to === unknown)).toEqual([]);
    expect(smtp.messages.filter((m) => m.to.includes(unknown))).toEqual([]);
    expect(await t.ctx.db('audit_events').where({ action: 'auth.password.reset_requested', request_id: missing.headers['x-request-id'] })).toEqual([]);
  });

  it('does the same work for known and unknown addresses: one `service.auth.password_reset` run of the same shape, nothing else', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    const unknown = `ghost${++n}-${Date.now()}@example.com`;
    const shapeOf = async (email: string) => {
      const res = await forgot(email).expect(202);
      const runs = await t.ctx.db('job_runs').where({ request_id: res.headers['x-request-id'] });
      return runs.map((r: any) => ({ kind: r.kind, actor_id: r.actor_id, keys: Object.keys(r.payload).sort(), to: r.payload.to === email.toLowerCase() }));
    };
    const known = await shapeOf(u.email);
    expect(known).toEqual([{ kind: 'service.auth.password_reset', actor_id: null, keys: ['meta', 'to'], to: true }]);
    expect(await shapeOf(unknown)).toEqual(known);
  });

  it('is limited to 3 per 15 minutes per address, known or not (case-insensitive): 429 with Retry-After', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    for (const email of [u.email, u.email.toUpperCase(), u.email]) await forgot(email).expect(202);
    const res = await forgot(u.email).expect(429);
    expect(res.body.code).toBe('rate_limited');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(900);

    const unknown = `nobody${++n}-${Date.now()}@example.com`;
    for (let i = 0; i < 3; i++) await forgot(unknown).expect(202);
    expect((await forgot(unknown).expect(429)).body.code).toBe('rate_limited');
  });
});

// ----- reset -----------------------------------------------------------------------------------

describe('POST /v1/auth/password/reset', () => {
  const forgot = (email: string) => t.http.post('/v1/auth/password/forgot').send({ email }).expect(202);
  const reset = (email: string, code: string, new_password = NEW_PASSWORD) => t.http.post('/v1/auth/password/reset').send({ email, code, new_password });

  it('sets the new password with the mailed code, revokes ALL sessions, verifies the email, mails a notice, audits', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace', sessions: 2 });
    await forgot(u.email.toUpperCase());
    const code = await resetCode(u.email);
    const res = await reset(u.email, code).expect(204);

    for (const s of u.sessions) await expectSession(s.auth, false);
    const row = await t.ctx.db('users').where({ id: u.userId }).first();
    expect(await verifyPassword(NEW_PASSWORD, row.password_hash)).toBe(true);
    expect(await verifyPassword(PASSWORD, row.password_hash)).toBe(false);
    expect(row.email_verified_at).not.toBeNull();

    const [event] = await audit('auth.password.reset', u.userId);
    expect(event).toMatchObject({ actor_kind: 'user', actor_id: u.userId, request_id: res.headers['x-request-id'] });
    expect(event.data).toEqual({ revoked_sessions: 2 });
    await smtp.waitForMessage((m) => m.to.includes(u.email) && m.subject === 'Your password was changed');

    // Used: the same code answers 401.
    expect((await reset(u.email, code, 'another fine password').expect(401)).body.code).toBe('invalid_code');
  });

  it('sets a first password for an account without one', async () => {
    const u = await signedInUser(t.ctx, { name: 'Ada Lovelace' });
    await forgot(u.email);
    await reset(u.email, await resetCode(u.email)).expect(204);
    expect(await verifyPassword(NEW_PASSWORD, (await storedHash(u.userId))!)).toBe(true);
  });

  it('a wrong code answers 401 invalid_code (audited); 5 wrong tries kill the code', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    await forgot(u.email);
    const code = await resetCode(u.email);
    for (let i = 0; i < 5; i++) {
      const res = await reset(u.email, wrongCode(code)).expect(401);
      expect(res.body).toMatchObject({ code: 'invalid_code', detail: 'The code is wrong or has expired.' });
    }
    expect(await audit('auth.password.reset_failed', u.userId)).toHaveLength(5);
    expect((await reset(u.email, code).expect(401)).body.code).toBe('invalid_code');
    expect(await verifyPassword(PASSWORD, (await storedHash(u.userId))!)).toBe(true);
  });

  it('the right code still works after fewer than 5 wrong tries', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    await forgot(u.email);
    const code = await resetCode(u.email);
    for (let i = 0; i < 4; i++) await reset(u.email, wrongCode(code)).expect(401);
    await reset(u.email, code).expect(204);
  });

  it('an expired code (16 minutes) answers 401 invalid_code', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    await forgot(u.email);
    const code = await resetCode(u.email);
    t.clock.advance(16 * 60_000);
    expect((await reset(u.email, code).expect(401)).body.code).toBe('invalid_code');
  });

  it('a newer code replaces the previous one', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    await forgot(u.email);
    const first = await resetCode(u.email, 1);
    await forgot(u.email);
    const second = await resetCode(u.email, 2);
    if (first !== second) expect((await reset(u.email, first).expect(401)).body.code).toBe('invalid_code');
    await reset(u.email, second).expect(204);
  });

  it('an unknown address answers the same 401 invalid_code', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    await forgot(u.email);
    const code = await resetCode(u.email);
    const known = await reset(u.email, wrongCode(code)).expect(401);
    const unknown = await reset(`nobody${++n}@example.com`, code).expect(401);
    const strip = (b: Record<string, unknown>) => ({ ...b, request_id: undefined });
    expect(strip(unknown.body)).toEqual(strip(known.body));
  });

  it('a too common new password answers 422 and does not use up the code', async () => {
    const u = await signUp(t, { name: 'Ada Lovelace' });
    await forgot(u.email);
    const code = await resetCode(u.email);
    const res = await reset(u.email, code, 'password123').expect(422);
    expect(res.body).toMatchObject({ code: 'password_too_common', errors: [{ location: 'body.new_password' }] });
    await reset(u.email, code).expect(204);
  });
});
