// Passkeys end to end with real WebAuthn crypto: a software authenticator (P-256, attestation
// `none`) makes the registration and assertion responses the server verifies with
// @simplewebauthn/server. Registration, discoverable sign-in, passkeys as a second factor and as a
// step-up proof, and every refusal the issue names: wrong origin, replayed and expired ceremonies,
// sign-count regression, a passkey of another user.
import { startTestApp, type TestApp } from '../support/test-app';
import { SoftwareAuthenticator } from '../support/webauthn-authenticator';
import { signedInUser } from '../support/users';
import {
  MFA_TEST_ENV,
  ORIGIN,
  PASSWORD,
  addPasskey,
  auditOf,
  enableTotp,
  nextCode,
  passkeyProof,
  passwordStep,
  registerAccount,
  type TestAccount,
} from '../support/mfa';
import { newId } from '../../src/ids';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp(MFA_TEST_ENV);
});
afterAll(() => t.close());

const me = async (auth: string) => (await t.http.get('/v1/auth/me').set('Authorization', auth).expect(200)).body;

async function startRegistration(a: TestAccount, body: object = {}) {
  return (await t.http.post('/v1/auth/passkeys/registration').set('Authorization', a.auth).send(body).expect(200)).body;
}

async function loginOptions() {
  return (await t.http.post('/v1/auth/passkeys/login/options').expect(200)).body;
}

describe('registration', () => {
  it('answers creation options from config, stores the verified passkey, and lists it', async () => {
    const a = await registerAccount(t);
    const start = await startRegistration(a, { name: 'Work laptop' });
    expect(start.ceremony_token).toMatch(/^cer_/);
    expect(new Date(start.expires_at).getTime()).toBe(t.clock.now.getTime() + 5 * 60_000);
    expect(start.options).toMatchObject({
      rp: { id: 'app.example.com', name: 'Tenant API' },
      user: { name: a.email, displayName: a.email },
      excludeCredentials: [],
      authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'preferred' },
      attestation: 'none',
      timeout: 300_000,
    });
    expect(start.options.pubKeyCredParams.map((p: any) => p.alg)).toEqual([-8, -7, -257]);
    // The user handle is random, not the user id.
    expect(Buffer.from(start.options.user.id, 'base64url').toString()).not.toContain(a.userId);

    const authenticator = new SoftwareAuthenticator({ origin: ORIGIN, transports: ['internal', 'hybrid'] });
    const credential = authenticator.create(start.options);
    const added = await t.http.post('/v1/auth/passkeys').set('Authorization', a.auth).send({ ceremony_token: start.ceremony_token, credential }).expect(201);
    expect(added.body).toEqual({
      id: expect.stringMatching(/^pky_/),
      name: 'Work laptop',
      created_at: t.clock.now.toISOString(),
      last_used_at: null,
      transports: ['internal', 'hybrid'],
      backed_up: false,
    });
    const row = await t.ctx.db('passkeys').where({ id: added.body.id }).first();
    expect(row).toMatchObject({ user_id: a.userId, credential_id: credential.id, sign_count: 0, device_type: 'singleDevice', backed_up: false });

    const list = await t.http.get('/v1/auth/passkeys').set('Authorization', a.auth).expect(200);
    expect(list.body).toEqual({ items: [added.body], next_cursor: null });
    expect((await me(a.auth)).mfa).toEqual({ enabled: true, totp: false, passkeys: 1, recovery_codes_remaining: 0 });
    const [event] = await auditOf(t, 'passkey.added', a.userId);
    expect(event).toMatchObject({ target_kind: 'passkey', target_id: added.body.id, data: { backed_up: false, device_type: 'singleDevice', transports: ['internal', 'hybrid'] } });

    // The next registration excludes it, and a real authenticator refuses to register twice.
    const next = await startRegistration(a);
    expect(next.options.excludeCredentials).toEqual([{ id: credential.id, type: 'public-key', transports: ['internal', 'hybrid'] }]);
    expect(() => authenticator.create(next.options)).toThrow(/InvalidStateError/);
  });

  it('names a synced passkey from its backup flags, and pages the list newest first', async () => {
    const a = await registerAccount(t);
    const synced = await addPasskey(t, a, new SoftwareAuthenticator({ origin: ORIGIN, backupEligible: true, backedUp: true }));
    expect(synced.passkey).toMatchObject({ name: 'Synced passkey', backed_up: true });
    const key = await addPasskey(t, a, new SoftwareAuthenticator({ origin: ORIGIN, transports: ['usb', 'nfc'] }));
    expect(key.passkey.name).toBe('Security key');
    const page1 = await t.http.get('/v1/auth/passkeys?limit=1').set('Authorization', a.auth).expect(200);
    expect(page1.body.items.map((p: any) => p.id)).toEqual([key.passkey.id]);
    const page2 = await t.http.get(`/v1/auth/passkeys?limit=1&cursor=${page1.body.next_cursor}`).set('Authorization', a.auth).expect(200);
    expect(page2.body).toEqual({ items: [synced.passkey], next_cursor: null });
    expect((await t.http.get('/v1/auth/passkeys?cursor=nonsense').set('Authorization', a.auth).expect(422)).body.errors[0].location).toBe('query.cursor');
  });

  it('refuses a response from another origin or for another challenge (422, ceremony used up)', async () => {
    const a = await registerAccount(t);
    const start = await startRegistration(a);
    const authenticator = new SoftwareAuthenticator({ origin: ORIGIN });
    const evil = await t.http.post('/v1/auth/passkeys').set('Authorization', a.auth).send({ ceremony_token: start.ceremony_token, credential: authenticator.create(start.options, { origin: 'https://evil.example.net' }) }).expect(422);
    expect(evil.body).toMatchObject({ code: 'passkey_verification_failed', errors: [{ location: 'body.credential', message: expect.stringContaining('origin') }] });
    // The ceremony was used by that attempt: the right response now finds it gone.
    const replay = await t.http.post('/v1/auth/passkeys').set('Authorization', a.auth).send({ ceremony_token: start.ceremony_token, credential: authenticator.create(start.options) }).expect(422);
    expect(replay.body).toMatchObject({ code: 'invalid_ceremony', errors: [{ location: 'body.ceremony_token' }] });

    const other = await startRegistration(a);
    const wrongChallenge = authenticator.create(other.options, { challenge: Buffer.from('not the challenge').toString('base64url') });
    expect((await t.http.post('/v1/auth/passkeys').set('Authorization', a.auth).send({ ceremony_token: other.ceremony_token, credential: wrongChallenge }).expect(422)).body.code).toBe('passkey_verification_failed');
    const rp = await startRegistration(a);
    expect((await t.http.post('/v1/auth/passkeys').set('Authorization', a.auth).send({ ceremony_token: rp.ceremony_token, credential: authenticator.create(rp.options, { rpId: 'example.com' }) }).expect(422)).body.code).toBe('passkey_verification_failed');
    expect(await t.ctx.db('passkeys').where({ user_id: a.userId })).toEqual([]);
  });

  it('binds the ceremony to its user and 5 minutes', async () => {
    const a = await registerAccount(t);
    const b = await registerAccount(t);
    const start = await startRegistration(a);
    const authenticator = new SoftwareAuthenticator({ origin: ORIGIN });
    expect((await t.http.post('/v1/auth/passkeys').set('Authorization', b.auth).send({ ceremony_token: start.ceremony_token, credential: authenticator.create(start.options) }).expect(422)).body.code).toBe('invalid_ceremony');
    const late = await startRegistration(a);
    t.clock.advance(5 * 60_000 + 1);
    expect((await t.http.post('/v1/auth/passkeys').set('Authorization', a.auth).send({ ceremony_token: late.ceremony_token, credential: authenticator.create(late.options) }).expect(422)).body.code).toBe('invalid_ceremony');
    // A sign-in ceremony is no registration ceremony.
    const login = await loginOptions();
    expect((await t.http.post('/v1/auth/passkeys').set('Authorization', a.auth).send({ ceremony_token: login.ceremony_token, credential: authenticator.create(start.options) }).expect(422)).body.code).toBe('invalid_ceremony');
  });

  it('refuses a credential registered to someone else (409) and more than 20 passkeys (409)', async () => {
    const a = await registerAccount(t);
    const b = await registerAccount(t);
    const start = await startRegistration(b);
    const credential = new SoftwareAuthenticator({ origin: ORIGIN }).create(start.options);
    await t.ctx.db('passkeys').insert(fakePasskeyRow(a.userId, credential.id));
    expect((await t.http.post('/v1/auth/passkeys').set('Authorization', b.auth).send({ ceremony_token: start.ceremony_token, credential }).expect(409)).body.code).toBe('passkey_already_registered');

    const c = await registerAccount(t);
    const pending = await startRegistration(c);
    await t.ctx.db('passkeys').insert(Array.from({ length: 20 }, (_, i) => fakePasskeyRow(c.userId, `fake-${c.userId}-${i}`)));
    expect((await t.http.post('/v1/auth/passkeys/registration').set('Authorization', c.auth).send({}).expect(409)).body.code).toBe('passkey_limit_reached');
    const late = new SoftwareAuthenticator({ origin: ORIGIN }).create(pending.options);
    expect((await t.http.post('/v1/auth/passkeys').set('Authorization', c.auth).send({ ceremony_token: pending.ceremony_token, credential: late }).expect(409)).body.code).toBe('passkey_limit_reached');
  });

  it('validates names (422 naming body.name) and renames only the caller\'s own (404 otherwise)', async () => {
    const a = await registerAccount(t);
    const b = await registerAccount(t);
    const { passkey } = await addPasskey(t, a);
    expect((await t.http.post('/v1/auth/passkeys/registration').set('Authorization', a.auth).send({ name: 'x'.repeat(65) }).expect(422)).body.errors[0].location).toBe('body.name');
    expect((await t.http.patch(`/v1/auth/passkeys/${passkey.id}`).set('Authorization', a.auth).send({ name: '   ' }).expect(422)).body.errors[0].location).toBe('body.name');
    const renamed = await t.http.patch(`/v1/auth/passkeys/${passkey.id}`).set('Authorization', a.auth).send({ name: '  Phone ' }).expect(200);
    expect(renamed.body).toEqual({ ...passkey, name: 'Phone' });
    expect((await t.http.patch(`/v1/auth/passkeys/${passkey.id}`).set('Authorization', b.auth).send({ name: 'Mine' }).expect(404)).body.code).toBe('not_found');
    expect(await auditOf(t, 'passkey.renamed', a.userId)).toHaveLength(1);
  });
});

describe('signing in with a passkey', () => {
  it('signs in with a discoverable credential and user verification: both factors, no 202', async () => {
    const a = await registerAccount(t);
    await enableTotp(t, a);
    const { authenticator, passkey } = await addPasskey(t, a);
    const start = await loginOptions();
    expect(start.options).toMatchObject({ rpId: 'app.example.com', userVerification: 'required', timeout: 300_000 });
    expect(start.options.allowCredentials ?? []).toEqual([]);

    const res = await t.http.post('/v1/auth/passkeys/login').send({ ceremony_token: start.ceremony_token, credential: authenticator.get(start.options), transport: 'bearer' }).expect(200);
    expect(res.body.user).toMatchObject({ id: a.userId, mfa: { enabled: true, totp: true, passkeys: 1, recovery_codes_remaining: 10 } });
    await t.http.get('/v1/auth/me').set('Authorization', `Bearer ${res.body.token}`).expect(200);
    expect(await t.ctx.db('passkeys').where({ id: passkey.id }).first()).toMatchObject({ sign_count: 1, last_used_at: t.clock.now });
    const events = await auditOf(t, 'auth.login.succeeded', a.userId);
    expect(events.at(-1).data).toEqual({ method: 'passkey', passkey_id: passkey.id, transport: 'bearer' });

    // The default transport is the cookie.
    const again = await loginOptions();
    const cookie = await t.http.post('/v1/auth/passkeys/login').send({ ceremony_token: again.ceremony_token, credential: authenticator.get(again.options) }).expect(200);
    expect(cookie.body.token).toBeUndefined();
    expect(cookie.headers['set-cookie']?.[0]).toMatch(/^session=/);
  });

  it('refuses a replayed ceremony, an expired one, another origin, no user verification, a bad signature and a stale sign count, all with one 401', async () => {
    const a = await registerAccount(t);
    const { authenticator } = await addPasskey(t, a);
    const refuse = async (body: object) => {
      const res = await t.http.post('/v1/auth/passkeys/login').send(body).expect(401);
      expect(res.body).toMatchObject({ code: 'invalid_credentials', detail: 'The passkey could not be verified. Start again.' });
    };
    const used = await loginOptions();
    const first = authenticator.get(used.options);
    await t.http.post('/v1/auth/passkeys/login').send({ ceremony_token: used.ceremony_token, credential: first, transport: 'bearer' }).expect(200);
    await refuse({ ceremony_token: used.ceremony_token, credential: first });

    const late = await loginOptions();
    t.clock.advance(5 * 60_000 + 1);
    await refuse({ ceremony_token: late.ceremony_token, credential: authenticator.get(late.options) });

    const o1 = await loginOptions();
    await refuse({ ceremony_token: o1.ceremony_token, credential: authenticator.get(o1.options, { origin: 'https://evil.example.net' }) });
    const o2 = await loginOptions();
    await refuse({ ceremony_token: o2.ceremony_token, credential: authenticator.get(o2.options, { userVerified: false }) });
    const o3 = await loginOptions();
    await refuse({ ceremony_token: o3.ceremony_token, credential: authenticator.get(o3.options, { privateKey: otherKey() }) });
    // The stored count is 1 (the sign-in above): an assertion that does not move past it is a cloned authenticator.
    const o4 = await loginOptions();
    await refuse({ ceremony_token: o4.ceremony_token, credential: authenticator.get(o4.options, { signCount: 1 }) });
    const o5 = await loginOptions();
    await t.http.post('/v1/auth/passkeys/login').send({ ceremony_token: o5.ceremony_token, credential: authenticator.get(o5.options) }).expect(200);

    const failures = (await t.ctx.db('audit_events').where({ action: 'auth.login.failed' }).whereRaw("data->>'method' = 'passkey'")).map((e: any) => e.data.detail);
    expect(failures).toEqual(expect.arrayContaining(['invalid_ceremony', 'assertion_failed', 'counter_regressed']));
  });

  it('refuses a credential nobody registered, and a user handle that is not its owner\'s', async () => {
    const a = await registerAccount(t);
    const { authenticator } = await addPasskey(t, a);
    const stranger = new SoftwareAuthenticator({ origin: ORIGIN });
    stranger.create((await startRegistration(await registerAccount(t))).options); // made, never sent
    const o1 = await loginOptions();
    await t.http.post('/v1/auth/passkeys/login').send({ ceremony_token: o1.ceremony_token, credential: stranger.get(o1.options) }).expect(401);
    const o2 = await loginOptions();
    const forged = authenticator.get(o2.options);
    forged.response.userHandle = Buffer.from('someone else').toString('base64url');
    await t.http.post('/v1/auth/passkeys/login').send({ ceremony_token: o2.ceremony_token, credential: forged }).expect(401);
  });
});

describe('a passkey as the second factor of a password sign-in', () => {
  it('challenges with the passkey and finishes with it (user verification preferred, not required)', async () => {
    const a = await registerAccount(t);
    const { authenticator, credentialId } = await addPasskey(t, a);
    const ch = await passwordStep(t, a);
    expect(ch.methods).toEqual(['passkey']);
    const start = await t.http.post('/v1/auth/login/mfa/passkey').send({ challenge_token: ch.challenge_token }).expect(200);
    expect(start.body.options).toMatchObject({ userVerification: 'preferred', allowCredentials: [{ id: credentialId, type: 'public-key' }] });
    const res = await t.http
      .post('/v1/auth/login/mfa')
      .send({ challenge_token: ch.challenge_token, passkey: { ceremony_token: start.body.ceremony_token, credential: authenticator.get(start.body.options, { userVerified: false }) } })
      .expect(200);
    expect(res.body.token).toBeDefined();
    expect((await auditOf(t, 'auth.login.succeeded', a.userId)).at(-1).data).toEqual({ method: 'password', mfa_method: 'passkey', transport: 'bearer' });
  });

  it('refuses another user\'s passkey, a ceremony of another challenge, and a replaced ceremony; each uses a try', async () => {
    const a = await registerAccount(t);
    const b = await registerAccount(t);
    const { authenticator } = await addPasskey(t, a);
    const bKey = (await addPasskey(t, b)).authenticator;
    const ch = await passwordStep(t, a);
    const start = (await t.http.post('/v1/auth/login/mfa/passkey').send({ challenge_token: ch.challenge_token }).expect(200)).body;
    // b's authenticator answers a's ceremony with b's own (discoverable) credential.
    const foreign = bKey.get({ ...start.options, allowCredentials: [] });
    const r1 = await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, passkey: { ceremony_token: start.ceremony_token, credential: foreign } }).expect(401);
    expect(r1.body).toMatchObject({ code: 'invalid_code', detail: 'The passkey could not be verified. 4 tries left.' });

    const other = await passwordStep(t, a);
    const otherStart = (await t.http.post('/v1/auth/login/mfa/passkey').send({ challenge_token: other.challenge_token }).expect(200)).body;
    await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, passkey: { ceremony_token: otherStart.ceremony_token, credential: authenticator.get(otherStart.options) } }).expect(401);

    const s1 = (await t.http.post('/v1/auth/login/mfa/passkey').send({ challenge_token: ch.challenge_token }).expect(200)).body;
    const s2 = (await t.http.post('/v1/auth/login/mfa/passkey').send({ challenge_token: ch.challenge_token }).expect(200)).body;
    await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, passkey: { ceremony_token: s1.ceremony_token, credential: authenticator.get(s1.options) } }).expect(401);
    await t.http.post('/v1/auth/login/mfa').send({ challenge_token: ch.challenge_token, passkey: { ceremony_token: s2.ceremony_token, credential: authenticator.get(s2.options) } }).expect(200);
  });

  it('answers 409 no_passkeys for a user with only the app, and 401 for an unknown challenge', async () => {
    const a = await registerAccount(t);
    await enableTotp(t, a);
    const ch = await passwordStep(t, a);
    expect((await t.http.post('/v1/auth/login/mfa/passkey').send({ challenge_token: ch.challenge_token }).expect(409)).body.code).toBe('no_passkeys');
    expect((await t.http.post('/v1/auth/login/mfa/passkey').send({ challenge_token: 'chl_unknown' }).expect(401)).body.code).toBe('invalid_challenge');
  });
});

describe('a passkey as the fresh proof of a sensitive change', () => {
  it('regenerates recovery codes, turns the app off and deletes the account with a verification ceremony', async () => {
    const a = await registerAccount(t);
    await enableTotp(t, a);
    const { authenticator } = await addPasskey(t, a);
    const start = await t.http.post('/v1/auth/passkeys/verification').set('Authorization', a.auth).expect(200);
    expect(start.body.options.userVerification).toBe('preferred');
    expect(start.body.options.allowCredentials).toHaveLength(1);

    await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ passkey: await passkeyProof(t, a, authenticator) }).expect(200);
    expect((await auditOf(t, 'mfa.recovery_codes.regenerated', a.userId))[0].data.proof).toBe('passkey');
    await t.http.delete('/v1/auth/mfa/totp').set('Authorization', a.auth).send({ passkey: await passkeyProof(t, a, authenticator) }).expect(204);
    // The passkey is still a second factor: the recovery codes stay.
    expect((await me(a.auth)).mfa).toEqual({ enabled: true, totp: false, passkeys: 1, recovery_codes_remaining: 10 });
    await t.http.delete('/v1/auth/me').set('Authorization', a.auth).send({ passkey: await passkeyProof(t, a, authenticator) }).expect(204);
    expect(await t.ctx.db('passkeys').where({ user_id: a.userId })).toEqual([]);
  });

  it('accepts the ceremony of a sign-in\'s passkey step for new recovery codes (spec 4.1)', async () => {
    const a = await registerAccount(t);
    const { authenticator } = await addPasskey(t, a);
    const ch = await passwordStep(t, a);
    const start = (await t.http.post('/v1/auth/login/mfa/passkey').send({ challenge_token: ch.challenge_token }).expect(200)).body;
    const res = await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ passkey: { ceremony_token: start.ceremony_token, credential: authenticator.get(start.options) } }).expect(200);
    expect(res.body.codes).toHaveLength(10);
  });

  it('refuses a replayed proof, another user\'s ceremony or passkey, and a sign-in ceremony (401 invalid_code)', async () => {
    const a = await registerAccount(t);
    const b = await registerAccount(t);
    const { authenticator } = await addPasskey(t, a);
    const bKey = (await addPasskey(t, b)).authenticator;
    const proof = await passkeyProof(t, a, authenticator);
    await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ passkey: proof }).expect(200);
    expect((await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ passkey: proof }).expect(401)).body.code).toBe('invalid_code');

    // a's ceremony, presented by b (with b's passkey): not b's ceremony.
    const aStart = (await t.http.post('/v1/auth/passkeys/verification').set('Authorization', a.auth).expect(200)).body;
    await t.http.delete('/v1/auth/me').set('Authorization', b.auth).send({ passkey: { ceremony_token: aStart.ceremony_token, credential: bKey.get({ ...aStart.options, allowCredentials: [] }) } }).expect(401);
    // b's ceremony answered with a's passkey: not b's passkey.
    const bStart = (await t.http.post('/v1/auth/passkeys/verification').set('Authorization', b.auth).expect(200)).body;
    await t.http.delete('/v1/auth/me').set('Authorization', b.auth).send({ passkey: { ceremony_token: bStart.ceremony_token, credential: authenticator.get({ ...bStart.options, allowCredentials: [] }) } }).expect(401);
    // A discoverable sign-in ceremony is not a verification ceremony.
    const login = await loginOptions();
    await t.http.delete('/v1/auth/me').set('Authorization', b.auth).send({ passkey: { ceremony_token: login.ceremony_token, credential: bKey.get(login.options) } }).expect(401);
    expect(await t.ctx.db('users').where({ id: b.userId })).toHaveLength(1);
    const failures = (await auditOf(t, 'auth.step_up.failed', b.userId)).map((e: any) => e.data.reason);
    expect(failures).toEqual(['invalid_ceremony', 'other_user', 'invalid_ceremony']);
  });

  it('answers 409 no_passkeys when there is nothing to verify with', async () => {
    const a = await registerAccount(t);
    expect((await t.http.post('/v1/auth/passkeys/verification').set('Authorization', a.auth).expect(409)).body.code).toBe('no_passkeys');
  });
});

describe('removing a passkey', () => {
  it('needs a fresh proof; removing the last one turns the second factor off (recovery codes gone)', async () => {
    const a = await registerAccount(t);
    const { authenticator, passkey } = await addPasskey(t, a);
    await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', a.auth).send({ passkey: await passkeyProof(t, a, authenticator) }).expect(200);
    expect((await t.http.delete(`/v1/auth/passkeys/${passkey.id}`).set('Authorization', a.auth).send({ password: PASSWORD }).expect(422)).body.code).toBe('second_factor_required');
    await t.http.delete(`/v1/auth/passkeys/${passkey.id}`).set('Authorization', a.auth).send({ passkey: await passkeyProof(t, a, authenticator) }).expect(204);
    expect((await me(a.auth)).mfa).toEqual({ enabled: false, totp: false, passkeys: 0, recovery_codes_remaining: 0 });
    await t.http.post('/v1/auth/login').send({ email: a.email, password: PASSWORD, transport: 'bearer' }).expect(200);
    const [event] = await auditOf(t, 'passkey.removed', a.userId);
    expect(event).toMatchObject({ target_id: passkey.id, data: { proof: 'passkey', second_factor_off: true } });
  });

  it('keeps the recovery codes while the app is on, and takes a TOTP code as proof', async () => {
    const a = await registerAccount(t);
    const { secret } = await enableTotp(t, a);
    const { passkey } = await addPasskey(t, a);
    await t.http.delete(`/v1/auth/passkeys/${passkey.id}`).set('Authorization', a.auth).send({ code: nextCode(t, secret) }).expect(204);
    expect((await me(a.auth)).mfa).toEqual({ enabled: true, totp: true, passkeys: 0, recovery_codes_remaining: 10 });
  });

  it('refuses to remove the only way to sign in (409 last_sign_in_method), but allows it with another passkey', async () => {
    // An account without a password (a passkey-only account).
    const u = await signedInUser(t.ctx);
    const a: TestAccount = { userId: u.userId, email: u.email, token: u.token, auth: u.auth };
    const first = await addPasskey(t, a);
    const res = await t.http.delete(`/v1/auth/passkeys/${first.passkey.id}`).set('Authorization', a.auth).send({ passkey: await passkeyProof(t, a, first.authenticator) }).expect(409);
    expect(res.body.code).toBe('last_sign_in_method');
    const second = await addPasskey(t, a);
    await t.http.delete(`/v1/auth/passkeys/${first.passkey.id}`).set('Authorization', a.auth).send({ passkey: await passkeyProof(t, a, second.authenticator) }).expect(204);
    expect((await t.http.get('/v1/auth/passkeys').set('Authorization', a.auth).expect(200)).body.items.map((p: any) => p.id)).toEqual([second.passkey.id]);
  });

  it('answers 404 for another user\'s passkey before any proof is spent', async () => {
    const a = await registerAccount(t);
    const b = await registerAccount(t);
    const { passkey } = await addPasskey(t, a);
    const bKey = await addPasskey(t, b);
    const proof = await passkeyProof(t, b, bKey.authenticator);
    expect((await t.http.delete(`/v1/auth/passkeys/${passkey.id}`).set('Authorization', b.auth).send({ passkey: proof }).expect(404)).body.code).toBe('not_found');
    // The proof was not spent by the 404.
    await t.http.delete(`/v1/auth/passkeys/${bKey.passkey.id}`).set('Authorization', b.auth).send({ passkey: proof }).expect(204);
    expect(await t.ctx.db('passkeys').where({ id: passkey.id })).toHaveLength(1);
  });
});

function otherKey() {
  const other = new SoftwareAuthenticator({ origin: ORIGIN });
  other.create({ rp: { id: 'app.example.com', name: 'x' }, user: { id: 'dXNlcg', name: 'x', displayName: 'x' }, challenge: 'Y2hhbGxlbmdl', pubKeyCredParams: [{ type: 'public-key', alg: -7 }] });
  return other.credentials[0]!.privateKey;
}

function fakePasskeyRow(userId: string, credentialId: string) {
  return {
    id: newId('pky'),
    user_id: userId,
    credential_id: credentialId,
    public_key: Buffer.from('not a key'),
    device_type: 'singleDevice',
    backed_up: false,
    aaguid: '00000000-0000-0000-0000-000000000000',
    name: 'Fake',
    created_at: new Date(),
  };
}
