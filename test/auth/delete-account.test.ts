import { startTestApp, type TestApp } from '../support/test-app';
import { insertUser } from '../../src/accounts/store';
import { hashPassword } from '../../src/accounts/passwords';
import { createSession } from '../../src/sessions/store';
import { signedInUser } from '../support/users';

const ORIGIN = 'https://app.example.com';
const PASSWORD = 'correct horse battery staple';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ BCRYPT_COST: '4', APP_ORIGINS: ORIGIN });
});
afterAll(() => t.close());

let n = 0;
async function userWithPassword(opts: { password?: string | null; transport?: 'bearer' | 'cookie' } = {}) {
  const email = `delete${++n}-${Date.now()}@Example.com`;
  const password = opts.password === undefined ? PASSWORD : opts.password;
  const passwordHash = password === null ? null : await hashPassword(password, 4);
  const userId = await insertUser(t.ctx.db, { email, name: 'Ada Lovelace', passwordHash });
  const session = await createSession(t.ctx.db, { userId, transport: opts.transport ?? 'bearer' }, t.ctx.config.session, t.ctx.now());
  return { userId, email, sessionId: session.id, token: session.token, auth: `Bearer ${session.token}` };
}

const auditOf = (action: string, userId: string) => t.ctx.db('audit_events').where({ action, actor_id: userId });

it('deletes the account with the password: 204, cookie cleared, every session refused, personal data gone, audited', async () => {
  const u = await userWithPassword();
  const other = await createSession(t.ctx.db, { userId: u.userId, transport: 'bearer' }, t.ctx.config.session, t.ctx.now());

  const res = await t.http.delete('/v1/auth/me').set('Authorization', u.auth).set('User-Agent', 'jest').send({ password: PASSWORD }).expect(204);
  expect(res.headers['set-cookie']?.[0]).toBe("session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0");

  // This token and the user's other sessions are refused at once.
  expect((await t.http.get('/v1/auth/me').set('Authorization', u.auth).expect(401)).body.code).toBe('unauthenticated');
  await t.http.get('/v1/auth/me').set('Authorization', `Bearer ${other.token}`).expect(401);
  await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ password: PASSWORD }).expect(401);

  // Personal data removed: the users row (email, name, password hash) and, by cascade, sessions.
  expect(await t.ctx.db('users').where({ id: u.userId }).first()).toBeUndefined();
  expect(await t.ctx.db('sessions').where({ user_id: u.userId })).toEqual([]);

  // The audit event keeps only the pseudonymous id: no email, name, address or user agent.
  const [event] = await auditOf('auth.account.deleted', u.userId);
  expect(event).toMatchObject({ actor_kind: 'user', actor_id: u.userId, target_kind: 'user', target_id: u.userId, ip: null, user_agent: null });
  expect(event.request_id).toBe(res.headers['x-request-id']);
  expect(event.data).toEqual({ proof: 'password', sessions_revoked: 2 });
  expect(JSON.stringify(event)).not.toContain(u.email.toLowerCase());

  // The email can register again at once.
  await expect(insertUser(t.ctx.db, { email: u.email })).resolves.toMatch(/^usr_/);
});

it('erases the address everywhere the service kept it: mail records, mail runs (waiting ones cancelled), audit data, the user\'s audit ip and user agent', async () => {
  const u = await userWithPassword();
  const address = u.email.toLowerCase();
  const operator = await signedInUser(t.ctx, { operator: true });
  // A verification mail waiting in the outbox (no workers here), an operator's test mail to the
  // address, and the record of a message sent to it earlier.
  await t.http.post('/v1/auth/verify-email/resend').set('Authorization', u.auth).set('User-Agent', 'jest').expect(202);
  await t.http.post('/ops/mail/test').set('Authorization', operator.auth).send({ to: address }).expect(202);
  await t.ctx.db('mail_messages').insert({ to: address, subject: 'Confirm your email address', text: 'x', html: 'x', transport: 'log' });
  const limitKeys = async () => (await t.ctx.redis.keys(`${t.ctx.config.redisPrefix}rl:*`)).filter((k) => k.includes(address) || k.includes(u.userId));
  expect(await limitKeys()).not.toEqual([]);
  const runsBefore = await t.ctx.db('job_runs').whereRaw("payload->>'to' = ?", [address]);
  expect(runsBefore).toHaveLength(2);

  await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ password: PASSWORD }).expect(204);

  // Rate-limit windows named the address (the resend) and the user id (the proof): gone too.
  expect(await limitKeys()).toEqual([]);
  const runs = await t.ctx.db('job_runs').whereIn('id', runsBefore.map((r: any) => r.id));
  for (const run of runs) expect(run).toMatchObject({ state: 'cancelled', payload: { to: '[erased]' } });
  expect(await t.ctx.db('mail_messages').where({ to: address })).toEqual([]);
  const dump = JSON.stringify(await t.ctx.db('audit_events').select('*'));
  expect(dump).not.toContain(address);
  const own = await t.ctx.db('audit_events').where({ actor_id: u.userId });
  expect(own.length).toBeGreaterThanOrEqual(2);
  for (const e of own) expect(e).toMatchObject({ ip: null, user_agent: null });
  const [testMail] = await t.ctx.db('audit_events').where({ action: 'ops.mail.test_sent', actor_id: operator.userId });
  expect(testMail.data).toMatchObject({ erased: true });
  expect(testMail.data.to).toBeUndefined();
});

it('removes pending one-time codes with the account', async () => {
  const u = await userWithPassword();
  await t.ctx.db('one_time_codes').insert({ user_id: u.userId, purpose: 'verify_email', code_hash: Buffer.alloc(32), expires_at: new Date(Date.now() + 60_000) });
  await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ password: PASSWORD }).expect(204);
  expect(await t.ctx.db('one_time_codes').where({ user_id: u.userId })).toEqual([]);
});

it('works for a cookie session from an allowed origin and clears the cookie', async () => {
  const u = await userWithPassword({ transport: 'cookie' });
  const res = await t.http.delete('/v1/auth/me').set('Cookie', `session=${u.token}`).set('Origin', ORIGIN).send({ password: PASSWORD }).expect(204);
  expect(res.headers['set-cookie']?.[0]).toMatch(/^session=; .*Max-Age=0$/);
  await t.http.get('/v1/auth/me').set('Cookie', `session=${u.token}`).expect(401);
});

it('refuses a cookie session from a foreign origin (CSRF) and keeps the account', async () => {
  const u = await userWithPassword({ transport: 'cookie' });
  await t.http.delete('/v1/auth/me').set('Cookie', `session=${u.token}`).set('Origin', 'https://evil.example').send({ password: PASSWORD }).expect(403);
  expect(await t.ctx.db('users').where({ id: u.userId }).first()).toBeDefined();
});

it('answers 401 invalid_credentials for a wrong password, keeps the account and audits auth.step_up.failed', async () => {
  const u = await userWithPassword();
  const res = await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ password: 'not the password' }).expect(401);
  expect(res.body.code).toBe('invalid_credentials');
  expect(await t.ctx.db('users').where({ id: u.userId }).first()).toBeDefined();
  expect(await t.ctx.db('sessions').where({ id: u.sessionId }).whereNull('revoked_at').first()).toBeDefined();
  expect(await auditOf('auth.account.deleted', u.userId)).toEqual([]);
  const failed = await auditOf('auth.step_up.failed', u.userId);
  expect(failed).toHaveLength(1);
  expect(failed[0].data).toEqual({ operation: 'deleteMe', method: 'password' });
});

it('answers 401 invalid_credentials to a password for an account that has none', async () => {
  const u = await userWithPassword({ password: null });
  const res = await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ password: PASSWORD }).expect(401);
  expect(res.body.code).toBe('invalid_credentials');
  expect(await t.ctx.db('users').where({ id: u.userId }).first()).toBeDefined();
});

it('answers 401 invalid_code to a code or passkey from a user without a second factor', async () => {
  const u = await userWithPassword();
  const code = await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ code: '123456' }).expect(401);
  expect(code.body.code).toBe('invalid_code');
  const passkey = await t.http
    .delete('/v1/auth/me')
    .set('Authorization', u.auth)
    .send({
      passkey: {
        ceremony_token: 'cer_Q2x7LrN4pW1sT8vY3bC6dF0gH5jKZk9m',
        credential: { id: 'hFZ0Qm3qkKp8p2sV1w', rawId: 'hFZ0Qm3qkKp8p2sV1w', type: 'public-key', response: { clientDataJSON: 'eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0', authenticatorData: 'SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2MFAAAAAQ', signature: 'MEUCIQDx' }, clientExtensionResults: {} },
      },
    });
  expect([passkey.status, passkey.body.code]).toEqual([401, 'invalid_code']);
  expect(await t.ctx.db('users').where({ id: u.userId }).first()).toBeDefined();
  expect((await auditOf('auth.step_up.failed', u.userId)).map((e: any) => e.data.method).sort()).toEqual(['code', 'passkey']);
});

it('answers 422 validation_failed without exactly one proof', async () => {
  const u = await userWithPassword();
  const alternatives = [{ location: 'body', message: 'must have exactly one of: code, passkey, password' }];
  const none = await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({}).expect(422);
  expect(none.body).toMatchObject({ code: 'validation_failed', errors: alternatives });
  const two = await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ password: PASSWORD, code: '123456' }).expect(422);
  expect(two.body).toMatchObject({ code: 'validation_failed', errors: alternatives });
  await t.http.delete('/v1/auth/me').set('Authorization', u.auth).expect(422);
  expect(await t.ctx.db('users').where({ id: u.userId }).first()).toBeDefined();
});

it('answers 401 unauthenticated without a session', async () => {
  const res = await t.http.delete('/v1/auth/me').send({ password: PASSWORD }).expect(401);
  expect(res.body.code).toBe('unauthenticated');
});

it('answers 429 with Retry-After after 5 wrong proofs in 15 minutes, even to the right password', async () => {
  const u = await userWithPassword();
  for (let i = 0; i < 5; i++) await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ password: `wrong-${i}` }).expect(401);
  const res = await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ password: PASSWORD }).expect(429);
  expect(res.body.code).toBe('rate_limited');
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(15 * 60);
  expect(await t.ctx.db('users').where({ id: u.userId }).first()).toBeDefined();
});
