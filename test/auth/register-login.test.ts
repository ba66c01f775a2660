// POST /v1/auth/register and POST /v1/auth/login: accounts, passwords, transports, the same
// answer (and the same bcrypt work) for unknown emails and wrong passwords, rehash on cost change,
// rate limits, audit events, and the verification mail reaching a real SMTP server.
import bcrypt from 'bcrypt';
import { startTestApp, type TestApp } from '../support/test-app';
import { codeIn, TestSmtpServer } from '../support/smtp';
import * as passwords from '../../src/accounts/passwords';
import { insertUser } from '../../src/accounts/store';

const PASSWORD = 'correct horse battery staple';
let seq = 0;
const uniqueEmail = (tag = 'user') => `${tag}${++seq}-${Date.now()}@example.com`;

/** Parses a Set-Cookie header into its name, value and attributes (lower-case keys). */
function parseSetCookie(header: string | string[] | undefined) {
  const line = Array.isArray(header) ? header[0]! : header!;
  const [pair, ...attrs] = line.split(';').map((s) => s.trim());
  const eq = pair!.indexOf('=');
  const attributes: Record<string, string | true> = {};
  for (const a of attrs) {
    const i = a.indexOf('=');
    attributes[(i === -1 ? a : a.slice(0, i)).toLowerCase()] = i === -1 ? true : a.slice(i + 1);
  }
  return { name: pair!.slice(0, eq), value: pair!.slice(eq + 1), attributes };
}

async function auditRows(t: TestApp, action: string, where: Record<string, unknown> = {}) {
  return t.ctx.db('audit_events').where({ action, ...where }).orderBy('at');
}

describe('with registration open (SMTP server, workers)', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;

  beforeAll(async () => {
    smtp = await TestSmtpServer.start();
    t = await startTestApp(
      { BCRYPT_COST: '4', SMTP_URL: smtp.url, RATE_LIMIT_LOGIN_PER_MINUTE: '1000', RATE_LIMIT_REGISTER_PER_MINUTE: '1000', APP_ORIGINS: 'https://app.example.com' },
      { workers: true },
    );
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.stop();
  });
  afterEach(() => jest.restoreAllMocks());

  describe('register', () => {
    it('creates an unverified account, signs it in with the cookie, mails a working 6-digit code, audits both events', async () => {
      const email = uniqueEmail('Ada');
      const res = await t.http
        .post('/v1/auth/register')
        .set('User-Agent', 'register-test/1.0')
        .set('X-Request-Id', 'req_registertest0001')
        .send({ email, password: PASSWORD, name: 'Ada Lovelace' })
        .expect(201);

      expect(res.body.user).toMatchObject({
        email: email.toLowerCase(),
        email_verified: false,
        name: 'Ada Lovelace',
        operator: false,
        mfa: { enabled: false, totp: false, passkeys: 0, recovery_codes_remaining: 0 },
      });
      expect(res.body.token).toBeUndefined();
      const cookie = parseSetCookie(res.headers['set-cookie']);
      expect(cookie.name).toBe('session');
      expect(cookie.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(cookie.attributes).toMatchObject({ path: '/', httponly: true, samesite: 'Lax' });
      expect(cookie.attributes.secure).toBeUndefined();

      // The cookie is a live session of the new account.
      const me = await t.http.get('/v1/auth/me').set('Cookie', `session=${cookie.value}`).expect(200);
      expect(me.body.id).toBe(res.body.user.id);
      const session = await t.ctx.db('sessions').where({ id: res.body.session.id }).first();
      expect(session).toMatchObject({ user_id: res.body.user.id, transport: 'cookie', user_agent: 'register-test/1.0' });

      // The verification mail reaches the SMTP server, and its code verifies the address.
      const mail = await smtp.waitForMessage((m) => m.to.includes(email.toLowerCase()));
      expect(mail.subject).toBe('Confirm your email address');
      const code = codeIn(mail);
      const ok = await t.ctx.services.codes.consume(res.body.user.id, 'verify_email', code);
      expect(ok).toBe(true);

      // Both events, written with the request that made them.
      const registered = await auditRows(t, 'auth.registered', { target_id: res.body.user.id });
      expect(registered).toHaveLength(1);
      expect(registered[0]).toMatchObject({ actor_kind: 'user', actor_id: res.body.user.id, request_id: 'req_registertest0001' });
      const login = await auditRows(t, 'auth.login.succeeded', { target_id: res.body.session.id });
      expect(login).toHaveLength(1);
      expect(login[0]).toMatchObject({ actor_id: res.body.user.id, request_id: 'req_registertest0001' });
    });

    it('queues the verification mail in the same transaction as the account (one run, one code)', async () => {
      const email = uniqueEmail();
      const res = await t.http.post('/v1/auth/register').send({ email, password: PASSWORD }).expect(201);
      const codes = await t.ctx.db('one_time_codes').where({ user_id: res.body.user.id, purpose: 'verify_email' });
      expect(codes).toHaveLength(1);
      const runs = await t.ctx.db('job_runs').where({ kind: 'service.mail.send', actor_id: res.body.user.id });
      expect(runs).toHaveLength(1);
      expect(runs[0].payload.to).toBe(email);
      expect(res.body.user.name).toBeNull();
    });

    it('returns a bearer token (and sets no cookie) with transport bearer', async () => {
      const res = await t.http.post('/v1/auth/register').send({ email: uniqueEmail(), password: PASSWORD, transport: 'bearer' }).expect(201);
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(res.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      await t.http.get('/v1/auth/me').set('Authorization', `Bearer ${res.body.token}`).expect(200);
    });

    it('stores the email lower case and answers 409 email_taken for any casing of it', async () => {
      const email = uniqueEmail('MiXeD');
      await t.http.post('/v1/auth/register').send({ email, password: PASSWORD }).expect(201);
      const rows = await t.ctx.db('users').whereRaw('lower(email) = ?', [email.toLowerCase()]);
      expect(rows.map((r: any) => r.email)).toEqual([email.toLowerCase()]);
      for (const again of [email, email.toLowerCase(), email.toUpperCase()]) {
        const res = await t.http.post('/v1/auth/register').send({ email: again, password: PASSWORD }).expect(409);
        expect(res.body.code).toBe('email_taken');
      }
    });

    it('refuses passwords outside 8–128 characters (schema) at body.password', async () => {
      for (const password of ['short7!', 'x'.repeat(129)]) {
        const res = await t.http.post('/v1/auth/register').send({ email: uniqueEmail(), password }).expect(422);
        expect(res.body.code).toBe('validation_failed');
        expect(res.body.errors.map((e: any) => e.location)).toEqual(['body.password']);
      }
      // 128 characters of 2 bytes each (256 bytes) are fine.
      await t.http.post('/v1/auth/register').send({ email: uniqueEmail(), password: 'é'.repeat(128) }).expect(201);
    });

    it('refuses the most common passwords with 422 password_too_common, whatever their case', async () => {
      expect(passwords.isCommonPassword('password')).toBe(true);
      for (const password of ['password', 'PassWord', 'qwertyuiop', '12345678']) {
        const email = uniqueEmail();
        const res = await t.http.post('/v1/auth/register').send({ email, password }).expect(422);
        expect(res.body.code).toBe('password_too_common');
        expect(res.body.errors).toEqual([{ message: 'is among the most common passwords', location: 'body.password' }]);
        expect(await t.ctx.db('users').where({ email }).first()).toBeUndefined();
      }
    });
  });

  describe('login', () => {
    async function account(password = PASSWORD) {
      const email = uniqueEmail();
      const res = await t.http.post('/v1/auth/register').send({ email, password, transport: 'bearer' }).expect(201);
      return { email, userId: res.body.user.id as string };
    }

    it('sets the session cookie by default (HttpOnly, SameSite=Lax, Path=/, no Secure on http) and returns no token', async () => {
      const { email, userId } = await account();
      const res = await t.http.post('/v1/auth/login').send({ email, password: PASSWORD }).expect(200);
      expect(res.body.token).toBeUndefined();
      expect(res.body.user).toMatchObject({ id: userId, email, email_verified: false });
      const cookie = parseSetCookie(res.headers['set-cookie']);
      expect(cookie.name).toBe('session');
      expect(cookie.attributes).toMatchObject({ path: '/', httponly: true, samesite: 'Lax' });
      expect(cookie.attributes.secure).toBeUndefined();
      // Max-Age runs to when the session ends unless used: its idle expiry (14 days by default).
      const maxAge = Number(cookie.attributes['max-age']);
      expect(Math.abs(t.ctx.now().getTime() + maxAge * 1000 - Date.parse(res.body.session.expires_at))).toBeLessThan(2000);
      expect(Date.parse(res.body.session.expires_at) - t.ctx.now().getTime()).toBe(14 * 24 * 3600 * 1000);
      await t.http.get('/v1/auth/me').set('Cookie', `session=${cookie.value}`).expect(200);
      // A cookie session is not a bearer token.
      await t.http.get('/v1/auth/me').set('Authorization', `Bearer ${cookie.value}`).expect(401);
    });

    it('returns the token and sets no cookie with transport bearer', async () => {
      const { email } = await account();
      const res = await t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' }).expect(200);
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(res.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const stored = await t.ctx.db('sessions').where({ id: res.body.session.id }).first();
      expect(stored.transport).toBe('bearer');
      // Only the hash is stored.
      expect(Buffer.from(stored.token_hash).toString('utf8')).not.toContain(res.body.token);
      await t.http.get('/v1/auth/me').set('Authorization', `Bearer ${res.body.token}`).expect(200);
    });

    it('compares the email case-insensitively', async () => {
      const { email } = await account();
      await t.http.post('/v1/auth/login').send({ email: email.toUpperCase(), password: PASSWORD, transport: 'bearer' }).expect(200);
    });

    it('never truncates: a 100-byte password does not accept another sharing its first 72 bytes', async () => {
      const prefix = 'p'.repeat(72);
      const mine = prefix + 'A'.repeat(28);
      const other = prefix + 'B'.repeat(28);
      expect(Buffer.byteLength(mine)).toBe(100);
      const { email } = await account(mine);
      for (const wrong of [other, prefix, prefix + 'A']) {
        const res = await t.http.post('/v1/auth/login').send({ email, password: wrong, transport: 'bearer' }).expect(401);
        expect(res.body.code).toBe('invalid_credentials');
      }
      await t.http.post('/v1/auth/login').send({ email, password: mine, transport: 'bearer' }).expect(200);
    });

    it('does not apply the common-password rule to sign-in', async () => {
      const email = uniqueEmail();
      await insertUser(t.ctx.db, { email, passwordHash: await passwords.hashPassword('password', 4) });
      await t.http.post('/v1/auth/login').send({ email, password: 'password', transport: 'bearer' }).expect(200);
    });

    it('answers unknown email, wrong password and a password-less account alike: 401, one bcrypt compare each, audited', async () => {
      const { email, userId } = await account();
      const noPassword = uniqueEmail();
      const noPasswordId = await insertUser(t.ctx.db, { email: noPassword });
      const spy = jest.spyOn(bcrypt, 'compare');

      const answers = [];
      for (const [who, password] of [
        [email, 'not the password'],
        [uniqueEmail('nobody'), PASSWORD],
        [noPassword, PASSWORD],
      ] as const) {
        spy.mockClear();
        const res = await t.http.post('/v1/auth/login').send({ email: who, password }).expect(401);
        expect(res.headers['set-cookie']).toBeUndefined();
        // Exactly one compare, against a hash of the configured cost (the dummy hash for no account).
        expect(spy).toHaveBeenCalledTimes(1);
        const hash = spy.mock.calls[0]![1] as string;
        expect(bcrypt.getRounds(hash)).toBe(t.ctx.config.auth.bcryptCost);
        answers.push({ status: res.status, code: res.body.code, detail: res.body.detail, keys: Object.keys(res.body).sort() });
      }
      expect(answers[1]).toEqual(answers[0]);
      expect(answers[2]).toEqual(answers[0]);
      expect(answers[0]).toMatchObject({ status: 401, code: 'invalid_credentials' });

      const failed = await t.ctx.db('audit_events').where({ action: 'auth.login.failed' }).whereIn('target_id', [userId, noPasswordId]);
      expect(failed).toHaveLength(2);
      for (const row of failed) expect(row.data).toMatchObject({ reason: 'invalid_credentials' });
      const anonymous = await t.ctx.db('audit_events').where({ action: 'auth.login.failed' }).whereNull('target_id');
      expect(anonymous.length).toBeGreaterThanOrEqual(1);
      expect(anonymous[0]).toMatchObject({ actor_kind: 'user', actor_id: null, data: { reason: 'invalid_credentials', method: 'password' } });
    });

    it('writes auth.login.succeeded with the session, transport and request', async () => {
      const { email, userId } = await account();
      const res = await t.http.post('/v1/auth/login').set('X-Request-Id', 'req_logintest00000001').send({ email, password: PASSWORD, transport: 'bearer' }).expect(200);
      const rows = await auditRows(t, 'auth.login.succeeded', { target_id: res.body.session.id });
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ actor_kind: 'user', actor_id: userId, target_kind: 'session', request_id: 'req_logintest00000001', data: { method: 'password', transport: 'bearer' } });
      expect(rows[0].ip).toMatch(/127\.0\.0\.1/);
    });

    it('refuses HTML-form bodies (no login CSRF from a cross-site form)', async () => {
      const { email } = await account();
      const form = `email=${encodeURIComponent(email)}&password=${encodeURIComponent(PASSWORD)}`;
      const login = await t.http.post('/v1/auth/login').type('form').set('Origin', 'https://evil.example').send(form).expect(415);
      expect(login.body.code).toBe('unsupported_media_type');
      expect(login.headers['set-cookie']).toBeUndefined();
      const fresh = uniqueEmail();
      const register = await t.http.post('/v1/auth/register').type('form').send(`email=${encodeURIComponent(fresh)}&password=${encodeURIComponent(PASSWORD)}`).expect(415);
      expect(register.body.code).toBe('unsupported_media_type');
      expect(await t.ctx.db('users').where({ email: fresh }).first()).toBeUndefined();
    });

    it('answers 422 for a body outside the contract', async () => {
      const res = await t.http.post('/v1/auth/login').send({ email: 'not-an-email', password: '' }).expect(422);
      expect(res.body.errors.map((e: any) => e.location).sort()).toEqual(['body.email', 'body.password']);
    });
  });
});

describe('configured: registration closed, https', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ BCRYPT_COST: '4', AUTH_REGISTRATION_ENABLED: 'false', PUBLIC_BASE_URL: 'https://api.example.com' });
  });
  afterAll(() => t?.close());

  it('answers 403 registration_closed and creates nothing', async () => {
    const email = uniqueEmail();
    const res = await t.http.post('/v1/auth/register').send({ email, password: PASSWORD }).expect(403);
    expect(res.body.code).toBe('registration_closed');
    expect(await t.ctx.db('users').where({ email }).first()).toBeUndefined();
  });

  it('names the __Host-session cookie and marks it Secure on https', async () => {
    const email = uniqueEmail();
    await insertUser(t.ctx.db, { email, passwordHash: await passwords.hashPassword(PASSWORD, 4) });
    const res = await t.http.post('/v1/auth/login').send({ email, password: PASSWORD }).expect(200);
    const cookie = parseSetCookie(res.headers['set-cookie']);
    expect(cookie.name).toBe('__Host-session');
    expect(cookie.attributes).toMatchObject({ path: '/', httponly: true, samesite: 'Lax', secure: true });
    expect(cookie.attributes.domain).toBeUndefined();
    await t.http.get('/v1/auth/me').set('Cookie', `__Host-session=${cookie.value}`).expect(200);
  });
});

describe('configured: bcrypt cost 5, 12-character minimum', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ BCRYPT_COST: '5', AUTH_PASSWORD_MIN_LENGTH: '12' });
  });
  afterAll(() => t?.close());

  it('refuses passwords shorter than the configured minimum at body.password, and hashes new ones at the configured cost', async () => {
    const res = await t.http.post('/v1/auth/register').send({ email: uniqueEmail(), password: 'elevenchars' }).expect(422);
    expect(res.body).toMatchObject({ code: 'validation_failed', errors: [{ message: 'must NOT have fewer than 12 characters', location: 'body.password' }] });
    const ok = await t.http.post('/v1/auth/register').send({ email: uniqueEmail(), password: 'twelve chars', transport: 'bearer' }).expect(201);
    const row = await t.ctx.db('users').where({ id: ok.body.user.id }).first();
    expect(bcrypt.getRounds(row.password_hash)).toBe(5);
  });

  it('replaces a cost-4 hash with a cost-5 one at sign-in, and only with the right password', async () => {
    const email = uniqueEmail();
    const userId = await insertUser(t.ctx.db, { email, passwordHash: await passwords.hashPassword(PASSWORD, 4) });
    const hashOf = async () => (await t.ctx.db('users').where({ id: userId }).first()).password_hash as string;

    await t.http.post('/v1/auth/login').send({ email, password: 'wrong password', transport: 'bearer' }).expect(401);
    expect(bcrypt.getRounds(await hashOf())).toBe(4);

    await t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' }).expect(200);
    const rehashed = await hashOf();
    expect(bcrypt.getRounds(rehashed)).toBe(5);
    await t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' }).expect(200);
    expect(await hashOf()).toBe(rehashed); // not rehashed again
  });
});

describe('rate limits (defaults: login 10/min per IP and per email, register 5/min per IP)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ BCRYPT_COST: '4', TRUST_PROXY: 'true' });
  });
  afterAll(() => t?.close());

  function expectLimited(res: { body: any; headers: Record<string, string> }) {
    expect(res.body.code).toBe('rate_limited');
    const retryAfter = Number(res.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
  }

  it('login: 10 a minute per IP, then 429 with Retry-After (even with the right password); other IPs unaffected', async () => {
    const email = uniqueEmail();
    await insertUser(t.ctx.db, { email, passwordHash: await passwords.hashPassword(PASSWORD, 4) });
    for (let i = 0; i < 10; i++) {
      await t.http.post('/v1/auth/login').set('X-Forwarded-For', '203.0.113.10').send({ email: uniqueEmail('ghost'), password: PASSWORD }).expect(401);
    }
    const limited = await t.http.post('/v1/auth/login').set('X-Forwarded-For', '203.0.113.10').send({ email, password: PASSWORD }).expect(429);
    expectLimited(limited);
    await t.http.post('/v1/auth/login').set('X-Forwarded-For', '203.0.113.11').send({ email, password: PASSWORD, transport: 'bearer' }).expect(200);
  });

  it('login: 10 a minute per email, whatever the IP (and whatever its casing)', async () => {
    const email = uniqueEmail();
    const userId = await insertUser(t.ctx.db, { email, passwordHash: await passwords.hashPassword(PASSWORD, 4) });
    for (let i = 0; i < 10; i++) {
      const who = i % 2 ? email.toUpperCase() : email;
      await t.http.post('/v1/auth/login').set('X-Forwarded-For', `198.51.100.${i + 1}`).send({ email: who, password: 'wrong password' }).expect(401);
    }
    const limited = await t.http.post('/v1/auth/login').set('X-Forwarded-For', '198.51.100.200').send({ email, password: PASSWORD }).expect(429);
    expectLimited(limited);
    // The refused attempt made no session, though its password was right.
    expect(await t.ctx.db('sessions').where({ user_id: userId })).toHaveLength(0);
  });

  it('register: 5 a minute per IP', async () => {
    for (let i = 0; i < 5; i++) {
      await t.http.post('/v1/auth/register').set('X-Forwarded-For', '192.0.2.50').send({ email: uniqueEmail(), password: PASSWORD, transport: 'bearer' }).expect(201);
    }
    const email = uniqueEmail();
    const limited = await t.http.post('/v1/auth/register').set('X-Forwarded-For', '192.0.2.50').send({ email, password: PASSWORD }).expect(429);
    expectLimited(limited);
    expect(await t.ctx.db('users').where({ email }).first()).toBeUndefined();
    await t.http.post('/v1/auth/register').set('X-Forwarded-For', '192.0.2.51').send({ email, password: PASSWORD, transport: 'bearer' }).expect(201);
  });
});
