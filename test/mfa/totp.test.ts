// The authenticator app and recovery codes end to end: setup, confirmation, the 202 challenge at
// sign-in and its 5 tries, single-use codes, turning it off with a fresh proof, recovery codes
// (single use, replaced as a set, rate limited), and what is stored. Codes come from an independent
// RFC 6238 generator (test/support/totp.ts), never from the server's library.
import { startTestApp, type TestApp } from '../support/test-app';
import { totp, totpAt, base32Decode } from '../support/totp';
import { MFA_TEST_ENV, PASSWORD, auditOf, enableTotp, nextCode, passwordStep, registerAccount } from '../support/mfa';
import { openSecret } from '../../src/mfa/secret-box';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp(MFA_TEST_ENV);
});
afterAll(() => t.close());

const me = async (auth: string) => (await t.http.get('/v1/auth/me').set('Authorization', auth).expect(200)).body;

describe('setting up the authenticator app', () => {
  it('answers a pending secret that does nothing until a code confirms it, then turns it on with 10 recovery codes', async () => {
    const a = await registerAccount(t);
    const setup = await t.http.post('/v1/auth/mfa/totp').set('Authorization', a.auth).expect(200);
    expect(setup.body.secret).toMatch(/^[A-Z2-7]{32}$/);
    const url = new URL(setup.body.otpauth_url);
    expect(url.protocol).toBe('otpauth:');
    expect(url.host).toBe('totp');
    expect(decodeURIComponent(url.pathname)).toBe(`/Tenant API:${a.email}`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({ secret: setup.body.secret, issuer: 'Tenant API', algorithm: 'SHA1', digits: '6', period: '30' });
    expect(new Date(setup.body.expires_at).getTime()).toBe(t.clock.now.getTime() + 15 * 60_000);

    // Pending: sign-in does not ask for it, /me says off.
    expect((await me(a.auth)).mfa).toEqual({ enabled: false, totp: false, passkeys: 0, recovery_codes_remaining: 0 });
    await t.http.post('/v1/auth/login').send({ email: a.email, password: PASSWORD, transport: 'bearer' }).expect(200);

    // A wrong code is counted; the right one turns it on.
    const wrong = await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', a.auth).send({ code: '000000' === totp(setup.body.secret, t.clock.now) ? '111111' : '000000' }).expect(401);
    expect(wrong.body).toMatchObject({ code: 'invalid_code', detail: 'The code is wrong. 4 tries left.' });
    const confirmed = await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', a.auth).send({ code: totp(setup.body.secret, t.clock.now) }).expect(200);
    expect(confirmed.body.codes).toHaveLength(10);
    expect(new Set(confirmed.body.codes).size).toBe(10);
    for (const c of confirmed.body.codes) expect(c).toMatch(/^[0-9a-z]{5}-[0-9a-z]{5}$/);
    expect((await me(a.auth)).mfa).toEqual({ enabled: true, totp: true, passkeys: 0, recovery_codes_remaining: 10 });

    const [event] = await auditOf(t, 'mfa.totp.enabled', a.userId);
    expect(event.data).toEqual({ recovery_codes_issued: 10 });

    // On: a new setup or confirmation is refused until it is turned off.
    expect((await t.http.post('/v1/auth/mfa/totp').set('Authorization', a.auth).expect(409)).body.code).toBe('totp_already_enabled');
    expect((await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', a.auth).send({ code: '123456' }).expect(409)).body.code).toBe('totp_already_enabled');
  });

  it('discards a pending setup after 5 wrong codes, and after 15 minutes', async () => {
    const a = await registerAccount(t);
    const setup = await t.http.post('/v1/auth/mfa/totp').set('Authorization', a.auth).expect(200);
    const right = totp(setup.body.secret, t.clock.now);
    const wrongCode = right === '999999' ? '999998' : '999999';
    for (let left = 4; left >= 1; left--) {
      const res = await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', a.auth).send({ code: wrongCode }).expect(401);
      expect(res.body.detail).toBe(`The code is wrong. ${left} ${left === 1 ? 'try' : 'tries'} left.`);
    }
    await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', a.auth).send({ code: wrongCode }).expect(401);
    expect((await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', a.auth).send({ code: right }).expect(409)).body.code).toBe('totp_setup_not_started');

    // A new setup starts afresh (new secret), and expires after 15 minutes.
    const again = await t.http.post('/v1/auth/mfa/totp').set('Authorization', a.auth).expect(200);
    expect(again.body.secret).not.toBe(setup.body.secret);
    t.clock.advance(15 * 60_000 + 1);
    expect((await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', a.auth).send({ code: totp(again.body.secret, t.clock.now) }).expect(409)).body.code).toBe('totp_setup_not_started');
  });

  it('never stores the secret in clear: AES-GCM under the configured key, bound to the user', async () => {
    const a = await registerAccount(t);
    const { secret, recoveryCodes } = await enableTotp(t, a);
    const row = await t.ctx.db('totp_credentials').where({ user_id: a.userId }).first();
    const raw = base32Decode(secret);
    expect(row.secret_ciphertext.includes(raw)).toBe(false);
    expect(row.secret_ciphertext.toString('latin1')).not.toContain(secret);
    expect(openSecret(t.ctx.config.mfa.encryptionKey, a.userId, row.secret_ciphertext).equals(raw)).toBe(true);
    expect(() => openSecret(t.ctx.config.mfa.encryptionKey, 'usr_someoneelse', row.secret_ciphertext)).toThrow();
    expect(() => openSecret(Buffer.alloc(32, 7), a.userId, row.secret_ciphertext)).toThrow();

    // Recovery codes: only HMACs, none of them in clear anywhere in the table or the audit log.
    const stored = JSON.stringify(await t.ctx.db('recovery_codes').where({ user_id: a.userId }));
    const audit = JSON.stringify(await t.ctx.db('audit_events').where({ actor_id: a.userId }));
    for (const code of recoveryCodes) {
      expect(stored).not.toContain(code);
      expect(audit).not.toContain(code);
    }
    expect(audit).not.toContain(secret);
  });

  it('validates the code field (422 naming body.code) and needs a session (401)', async () => {
    const a = await registerAccount(t);
    const res = await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', a.auth).send({ code: '1'.repeat(17) }).expect(422);
    expect(res.body.errors).toEqual([expect.objectContaining({ location: 'body.code' })]);
    await t.http.post('/v1/auth/mfa/totp').expect(401);
    expect((await t.http.post('/v1/auth/mfa/totp/confirm').set('Authorization', a.auth).send({ code: '123456' }).expect(409)).body.code).toBe('totp_setup_not_started');
  });
});

describe('signing in with the authenticator app on', () => {
  it('answers 202 with a challenge and no session, then the code finishes it (bearer), once', async () => {
    const a = await registerAccount(t);
    const { secret } = await enableTotp(t, a);
    const sessionsBefore = await t.ctx.db('sessions').where({ user_id: a.userId }).count<{ n: number }[]>({ n: '*' });

    const res = await t.http.post('/v1/auth/login').send({ email: a.email, password: PASSWORD, transport: 'bearer' }).expect(202);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.body).toEqual({ mfa_required: true, challenge_token: expect.stringMatching(/^chl_/), methods: ['totp', 'recovery_code'], expires_at: new Date(t.clock.now.getTime() + 5 * 60_000).toISOString() });
    expect(await t.ctx.db('sessions').where({ user_id: a.userId }).count<{ n: number }[]>({ n: '*' })).toEqual(sessionsBefore);
    // Only the hash of the challenge token is stored.
    expect(JSON.stringify(await t.ctx.db('mfa_challenges').where({ user_id: a.userId }))).not.toContain(res.body.challenge_token.slice(4));

    const code = nextCode(t, secret);
    const done = await t.http.post('/v1/auth/login/mfa').send({ challenge_token: res.body.challenge_token, code }).expect(200);
    expect(done.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/); // the challenge's transport (bearer)
    expect(done.body.user.mfa).toEqual({ enabled: true, totp: true, passkeys: 0, recovery_codes_remaining: 10 });
    await t.http.get('/v1/auth/me').set('Authorization', `Bearer ${done.body.token}`).expect(200);

    // The challenge is used up, and the code too (another challenge, same code: refused).
    expect((await t.http.post('/v1/auth/login/mfa').send({ challenge_token: res.body.challenge_token, code }).expect(401)).body.code).toBe('invalid_challenge');
    const second = await passwordStep(t, a);
    expect((await t.http.post('/v1/auth/login/mfa').send({ challenge_token: second.challenge_token, code }).expect(401)).body.code).toBe('invalid_code');

    const [required] = await auditOf(t, 'auth.login.mfa_required', a.userId);
    expect(required.data).toEqual({ method: 'password', methods: ['totp', 'recovery_code'] });
    const succeeded = await auditOf(t, 'auth.login.succeeded', a.userId);
    expect(succeeded.at(-1).data).toEqual({ method: 'password', mfa_method: 'totp', transport: 'bearer' });
    const [failed] = await auditOf(t, 'auth.login.failed', a.userId);
    expect(failed.data).toMatchObject({ reason: 'invalid_code', mfa_method: 'totp', failures: 1 });
  });

  it('accepts the code of the step before (clock drift) but never an older step than one already used', async () => {
    const a = await registerAccount(t);
    const { secret } = await enableTotp(t, a);
    t.clock.advance(60_000);
    const previous = totpAt(secret, t.clock.now, -1);
    const ch = await passwordStep(t, a);
    await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, code: previous }).expect(200);
    // Now the current step's code is newer: accepted. Then the previous one again: refused.
    const ch2 = await passwordStep(t, a);
    await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch2.challenge_token, code: totp(secret, t.clock.now) }).expect(200);
    const ch3 = await passwordStep(t, a);
    await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch3.challenge_token, code: previous }).expect(401);
    // Two steps away is outside the window.
    const ch4 = await passwordStep(t, a);
    await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch4.challenge_token, code: totpAt(secret, t.clock.now, 2) }).expect(401);
  });

  it('ends the challenge at the 5th wrong factor with 429, after which even the right code is refused', async () => {
    const a = await registerAccount(t);
    const { secret } = await enableTotp(t, a);
    const ch = await passwordStep(t, a);
    const right = nextCode(t, secret);
    const wrong = right === '000000' ? '000001' : '000000';
    for (let left = 4; left >= 1; left--) {
      const res = await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, code: wrong }).expect(401);
      expect(res.body).toMatchObject({ code: 'invalid_code', detail: `The code is wrong. ${left} ${left === 1 ? 'try' : 'tries'} left.` });
    }
    const fifth = await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, recovery_code: 'aaaaa-aaaaa' }).expect(429);
    expect(fifth.body.code).toBe('rate_limited');
    expect(fifth.headers['retry-after']).toBe('0');
    expect((await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, code: right }).expect(401)).body.code).toBe('invalid_challenge');
    expect(await t.ctx.db('sessions').where({ user_id: a.userId }).count<{ n: number }[]>({ n: '*' })).toEqual([{ n: 1 }]);
  });

  it('expires the challenge after 5 minutes; an unknown challenge is refused alike', async () => {
    const a = await registerAccount(t);
    const { secret } = await enableTotp(t, a);
    const ch = await passwordStep(t, a);
    t.clock.advance(5 * 60_000 + 1);
    expect((await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, code: totp(secret, t.clock.now) }).expect(401)).body.code).toBe('invalid_challenge');
    expect((await t.http.post('/v1/auth/login/mfa').send({ challenge_token: 'chl_nosuchchallenge', code: '123456' }).expect(401)).body.code).toBe('invalid_challenge');
  });

  it('gives the session the transport of the sign-in (cookie), unless the request names one', async () => {
    const a = await registerAccount(t);
    const { secret } = await enableTotp(t, a);
    const ch = await passwordStep(t, a, 'cookie');
    const res = await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, code: nextCode(t, secret) }).expect(200);
    expect(res.body.token).toBeUndefined();
    expect(res.headers['set-cookie']?.[0]).toMatch(/^session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    const ch2 = await passwordStep(t, a, 'cookie');
    const bearer = await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch2.challenge_token, code: nextCode(t, secret), transport: 'bearer' }).expect(200);
    expect(bearer.body.token).toBeDefined();
    expect(bearer.headers['set-cookie']).toBeUndefined();
  });

  it('refuses a body that is not exactly one factor (422)', async () => {
    const res = await t.http.post('/v1/auth/login/mfa').send({ challenge_token: 'chl_x', code: '123456', recovery_code: 'aaaaa-aaaaa' }).expect(422);
    expect(res.body.code).toBe('validation_failed');
    await t.http.post('/v1/auth/login/mfa').send({ challenge_token: 'chl_x' }).expect(422);
  });
});

describe('recovery codes', () => {
  it('each works once in place of the app, as typed by a person; /me counts down to the warning at 0', async () => {
    const a = await registerAccount(t);
    const { recoveryCodes } = await enableTotp(t, a);
    const ch = await passwordStep(t, a);
    const typed = ` ${recoveryCodes[0]!.toUpperCase().replace('-', ' ')} `;
    const res = await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, recovery_code: typed }).expect(200);
    expect(res.body.user.mfa.recovery_codes_remaining).toBe(9);
    const [used] = await auditOf(t, 'auth.mfa.recovery_code_used', a.userId);
    expect(used.data).toEqual({ remaining: 9 });

    const again = await passwordStep(t, a);
    expect((await t.http.post('/v1/auth/login/mfa').send({ challenge_token: again.challenge_token, recovery_code: recoveryCodes[0] }).expect(401)).body.code).toBe('invalid_code');

    // Spend the rest: the last one leaves 0 (the app shows the warning) and the method disappears.
    let last;
    for (const code of recoveryCodes.slice(1)) {
      const c = await passwordStep(t, a);
      last = await t.http.post('/v1/auth/login/mfa').send({ challenge_token: c.challenge_token, recovery_code: code }).expect(200);
    }
    expect(last!.body.user.mfa.recovery_codes_remaining).toBe(0);
    expect((await me(a.auth)).mfa.recovery_codes_remaining).toBe(0);
    expect((await passwordStep(t, a)).methods).toEqual(['totp']);
  });

  it('regenerates with a fresh TOTP code: a new set of 10, the old set dead at once, audited', async () => {
    const a = await registerAccount(t);
    const { secret, recoveryCodes } = await enableTotp(t, a);
    const res = await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ code: nextCode(t, secret) }).expect(200);
    expect(res.body.codes).toHaveLength(10);
    expect(res.body.created_at).toBe(t.clock.now.toISOString());
    expect(res.body.codes.filter((c: string) => recoveryCodes.includes(c))).toEqual([]);

    const ch = await passwordStep(t, a);
    await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, recovery_code: recoveryCodes[1] }).expect(401);
    await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, recovery_code: res.body.codes[1] }).expect(200);

    const [event] = await auditOf(t, 'mfa.recovery_codes.regenerated', a.userId);
    expect(event.data).toEqual({ proof: 'code', count: 10 });
  });

  it('needs a proof that verifies (401, audited), refuses replayed codes, and is limited to 3 an hour (429)', async () => {
    const a = await registerAccount(t);
    const { secret } = await enableTotp(t, a);
    const code = nextCode(t, secret);
    const wrong = code === '000000' ? '000001' : '000000';
    expect((await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ code: wrong }).expect(401)).body.code).toBe('invalid_code');
    const [failed] = await auditOf(t, 'auth.step_up.failed', a.userId);
    expect(failed.data).toEqual({ operation: 'regenerateRecoveryCodes', method: 'code' });
    await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ code }).expect(200);
    // The same code again (same step): refused as a replay. That was the 3rd attempt this hour.
    expect((await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ code }).expect(401)).body.code).toBe('invalid_code');
    const limited = await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ code: nextCode(t, secret) }).expect(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('answers 409 mfa_not_enabled without a second factor, and 422 for a body that is not exactly one proof (spec 4.1)', async () => {
    const a = await registerAccount(t);
    expect((await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ code: '123456' }).expect(409)).body.code).toBe('mfa_not_enabled');
    const both = await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ code: '123456', passkey: { ceremony_token: 'x', credential: { id: 'a', rawId: 'a', type: 'public-key', response: {} } } }).expect(422);
    expect(both.body.code).toBe('validation_failed');
    const long = await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ code: '1'.repeat(17) }).expect(422);
    expect(long.body.errors).toEqual([expect.objectContaining({ location: 'body.code' })]);
    const token = await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ passkey: { ceremony_token: 'x'.repeat(257), credential: { id: 'a', rawId: 'a', type: 'public-key', response: {} } } }).expect(422);
    expect(token.body.errors).toEqual([expect.objectContaining({ location: 'body.passkey.ceremony_token' })]);
    await t.http.post('/v1/auth/mfa/recovery-codes').send({ code: '123456' }).expect(401);
  });
});

describe('turning the authenticator app off', () => {
  it('needs a fresh code (a password is no proof while it is on); then sign-in asks for nothing and the recovery codes are gone', async () => {
    const a = await registerAccount(t);
    const { secret } = await enableTotp(t, a);
    const pw = await t.http.delete('/v1/auth/mfa/totp').set('Authorization', a.auth).send({ password: PASSWORD }).expect(422);
    expect(pw.body).toMatchObject({ code: 'second_factor_required', errors: [{ location: 'body.password' }] });
    const code = nextCode(t, secret);
    const wrong = code === '000000' ? '000001' : '000000';
    await t.http.delete('/v1/auth/mfa/totp').set('Authorization', a.auth).send({ code: wrong }).expect(401);
    await t.http.delete('/v1/auth/mfa/totp').set('Authorization', a.auth).send({ code }).expect(204);

    expect((await me(a.auth)).mfa).toEqual({ enabled: false, totp: false, passkeys: 0, recovery_codes_remaining: 0 });
    expect(await t.ctx.db('recovery_codes').where({ user_id: a.userId })).toEqual([]);
    expect(await t.ctx.db('totp_credentials').where({ user_id: a.userId })).toEqual([]);
    await t.http.post('/v1/auth/login').send({ email: a.email, password: PASSWORD, transport: 'bearer' }).expect(200);
    const [event] = await auditOf(t, 'mfa.totp.disabled', a.userId);
    expect(event.data).toEqual({ proof: 'code', second_factor_off: true });

    expect((await t.http.delete('/v1/auth/mfa/totp').set('Authorization', a.auth).send({ code: nextCode(t, secret) }).expect(409)).body.code).toBe('mfa_not_enabled');
  });

  it('limits wrong proofs to 5 per 15 minutes (429 even for the right one)', async () => {
    const a = await registerAccount(t);
    const { secret } = await enableTotp(t, a);
    const code = nextCode(t, secret);
    const wrong = code === '000000' ? '000001' : '000000';
    for (let i = 0; i < 5; i++) await t.http.delete('/v1/auth/mfa/totp').set('Authorization', a.auth).send({ code: wrong }).expect(401);
    expect((await t.http.delete('/v1/auth/mfa/totp').set('Authorization', a.auth).send({ code }).expect(429)).body.code).toBe('rate_limited');
  });
});

describe('deleting the account with the authenticator app on', () => {
  it('takes a TOTP code as the fresh proof, and refuses the password', async () => {
    const a = await registerAccount(t);
    const { secret } = await enableTotp(t, a);
    expect((await t.http.delete('/v1/auth/me').set('Authorization', a.auth).send({ password: PASSWORD }).expect(422)).body.code).toBe('second_factor_required');
    await t.http.delete('/v1/auth/me').set('Authorization', a.auth).send({ code: nextCode(t, secret) }).expect(204);
    expect(await t.ctx.db('users').where({ id: a.userId })).toEqual([]);
    expect(await t.ctx.db('totp_credentials').where({ user_id: a.userId })).toEqual([]);
    expect(await t.ctx.db('recovery_codes').where({ user_id: a.userId })).toEqual([]);
    const [event] = await auditOf(t, 'auth.account.deleted', a.userId);
    expect(event.data.proof).toBe('code');
  });
});
