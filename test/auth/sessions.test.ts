// Signed-in devices: GET /v1/auth/me, GET /v1/auth/sessions, DELETE /v1/auth/sessions/{id},
// POST /v1/auth/logout and /logout-all — revocation refused at once, idle and absolute expiry
// with the injectable clock, audit events in the same transaction.
import { startTestApp, type TestApp } from '../support/test-app';
import { insertUser } from '../../src/accounts/store';
import { hashPassword } from '../../src/accounts/passwords';
import { PASSWORD, signIn } from '../support/accounts';

const ORIGIN = 'https://app.example.com';
let t: TestApp;
let seq = 0;

beforeAll(async () => {
  t = await startTestApp({ BCRYPT_COST: '4', APP_ORIGINS: ORIGIN, RATE_LIMIT_LOGIN_PER_MINUTE: '1000' });
});
afterAll(() => t?.close());

const DAY = 24 * 3600 * 1000;

/** An account with PASSWORD and no session yet (made directly: registering would start one); signIn starts them. */
async function newAccount() {
  const email = `sessions${++seq}-${Date.now()}@example.com`;
  const userId = await insertUser(t.ctx.db, { email, name: 'Grace', passwordHash: await hashPassword(PASSWORD, 4) });
  return { email, userId };
}

const audit = (action: string, where: Record<string, unknown>) => t.ctx.db('audit_events').where({ action, ...where });

describe('GET /v1/auth/me', () => {
  it('answers the signed-in user (no second factor yet)', async () => {
    const { email, userId } = await newAccount();
    const { auth } = await signIn(t, { email });
    const res = await t.http.get('/v1/auth/me').set('Authorization', auth).expect(200);
    expect(res.body).toMatchObject({
      id: userId,
      email,
      email_verified: false,
      name: 'Grace',
      operator: false,
      mfa: { enabled: false, totp: false, passkeys: 0, recovery_codes_remaining: 0 },
    });
    await t.ctx.db('users').where({ id: userId }).update({ email_verified_at: new Date(), is_operator: true });
    const after = await t.http.get('/v1/auth/me').set('Authorization', auth).expect(200);
    expect(after.body).toMatchObject({ email_verified: true, operator: true });
  });

  it('answers 401 without a session', async () => {
    const res = await t.http.get('/v1/auth/me').expect(401);
    expect(res.body.code).toBe('unauthenticated');
  });
});

describe('GET /v1/auth/sessions', () => {
  it('lists live sessions newest first, marks the current one, pages with a cursor', async () => {
    const { email } = await newAccount();
    const first = await signIn(t, { email }, { headers: { 'User-Agent': 'phone/1' } });
    const second = await signIn(t, { email }, { headers: { 'User-Agent': 'laptop/2' } });
    const third = await signIn(t, { email }, { headers: { 'User-Agent': 'tablet/3' } });
    const revoked = await signIn(t, { email }, { headers: { 'User-Agent': 'old/4' } });
    await t.http.post('/v1/auth/logout').set('Authorization', revoked.auth).expect(204);

    const res = await t.http.get('/v1/auth/sessions').set('Authorization', second.auth).expect(200);
    expect(res.body.items.map((s: any) => s.id)).toEqual([third.sessionId, second.sessionId, first.sessionId]);
    expect(res.body.items.map((s: any) => s.current)).toEqual([false, true, false]);
    expect(res.body.items[0]).toMatchObject({ user_agent: 'tablet/3', ip: expect.stringMatching(/127\.0\.0\.1/) });
    expect(res.body.next_cursor).toBeNull();

    const page1 = await t.http.get('/v1/auth/sessions?limit=2').set('Authorization', first.auth).expect(200);
    expect(page1.body.items.map((s: any) => s.id)).toEqual([third.sessionId, second.sessionId]);
    expect(page1.body.next_cursor).toEqual(expect.any(String));
    const page2 = await t.http.get(`/v1/auth/sessions?limit=2&cursor=${page1.body.next_cursor}`).set('Authorization', first.auth).expect(200);
    expect(page2.body.items.map((s: any) => [s.id, s.current])).toEqual([[first.sessionId, true]]);
    expect(page2.body.next_cursor).toBeNull();

    const bad = await t.http.get('/v1/auth/sessions?cursor=nonsense').set('Authorization', first.auth).expect(422);
    expect(bad.body.errors[0].location).toBe('query.cursor');
  });

  it("never shows another user's sessions", async () => {
    const a = await newAccount();
    const b = await newAccount();
    const mine = await signIn(t, { email: a.email });
    await signIn(t, { email: b.email });
    const res = await t.http.get('/v1/auth/sessions').set('Authorization', mine.auth).expect(200);
    expect(res.body.items.map((s: any) => s.id)).toEqual([mine.sessionId]);
  });
});

describe('POST /v1/auth/logout', () => {
  it('revokes this session only (refused at once), clears the cookie, audits auth.logout', async () => {
    const { email, userId } = await newAccount();
    const other = await signIn(t, { email });
    const me = await signIn(t, { email });
    const res = await t.http.post('/v1/auth/logout').set('Authorization', me.auth).set('X-Request-Id', 'req_logouttest0000001').expect(204);
    expect(String(res.headers['set-cookie'])).toMatch(/^session=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0$/);
    await t.http.get('/v1/auth/me').set('Authorization', me.auth).expect(401);
    await t.http.post('/v1/auth/logout').set('Authorization', me.auth).expect(401);
    await t.http.get('/v1/auth/me').set('Authorization', other.auth).expect(200);
    const rows = await audit('auth.logout', { target_id: me.sessionId });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ actor_kind: 'user', actor_id: userId, target_kind: 'session', request_id: 'req_logouttest0000001' });
  });

  it('works with the cookie from an allowed origin, refuses a foreign origin (CSRF)', async () => {
    const { email } = await newAccount();
    const { cookie } = await signIn(t, { email }, { transport: 'cookie' });
    const foreign = await t.http.post('/v1/auth/logout').set('Cookie', cookie).set('Origin', 'https://evil.example').expect(403);
    expect(foreign.body.code).toBe('forbidden');
    await t.http.get('/v1/auth/me').set('Cookie', cookie).expect(200);
    const res = await t.http.post('/v1/auth/logout').set('Cookie', cookie).set('Origin', ORIGIN).expect(204);
    expect(String(res.headers['set-cookie'])).toContain('Max-Age=0');
    await t.http.get('/v1/auth/me').set('Cookie', cookie).expect(401);
  });
});

describe('POST /v1/auth/logout-all', () => {
  it('revokes every other session (count answered and audited), keeps this one', async () => {
    const { email, userId } = await newAccount();
    const others = [await signIn(t, { email }), await signIn(t, { email }), await signIn(t, { email }, { transport: 'cookie' })];
    const me = await signIn(t, { email });
    const unrelated = await signIn(t, { email: (await newAccount()).email });

    const res = await t.http.post('/v1/auth/logout-all').set('Authorization', me.auth).expect(200);
    expect(res.body).toEqual({ revoked: 3 });
    for (const o of others) {
      const req = t.http.get('/v1/auth/me');
      await ('auth' in o ? req.set('Authorization', o.auth) : req.set('Cookie', o.cookie)).expect(401);
    }
    await t.http.get('/v1/auth/me').set('Authorization', me.auth).expect(200);
    await t.http.get('/v1/auth/me').set('Authorization', unrelated.auth).expect(200);
    const rows = await audit('auth.logout_all', { actor_id: userId });
    expect(rows).toHaveLength(1);
    expect(rows[0].data).toMatchObject({ revoked: 3 });

    const again = await t.http.post('/v1/auth/logout-all').set('Authorization', me.auth).expect(200);
    expect(again.body).toEqual({ revoked: 0 });
  });
});

describe('DELETE /v1/auth/sessions/{id}', () => {
  it('revokes another of my sessions: refused at once, no cookie cleared, audited', async () => {
    const { email, userId } = await newAccount();
    const phone = await signIn(t, { email });
    const me = await signIn(t, { email });
    const res = await t.http.delete(`/v1/auth/sessions/${phone.sessionId}`).set('Authorization', me.auth).expect(204);
    expect(res.headers['set-cookie']).toBeUndefined();
    await t.http.get('/v1/auth/me').set('Authorization', phone.auth).expect(401);
    await t.http.get('/v1/auth/me').set('Authorization', me.auth).expect(200);
    const rows = await audit('auth.session.revoked', { target_id: phone.sessionId });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ actor_id: userId, data: { current: false } });
    // Already revoked: 404.
    const again = await t.http.delete(`/v1/auth/sessions/${phone.sessionId}`).set('Authorization', me.auth).expect(404);
    expect(again.body.code).toBe('not_found');
  });

  it("answers 404 for another user's session (and leaves it alone) and for an unknown id", async () => {
    const mine = await signIn(t, { email: (await newAccount()).email });
    const theirs = await signIn(t, { email: (await newAccount()).email });
    const res = await t.http.delete(`/v1/auth/sessions/${theirs.sessionId}`).set('Authorization', mine.auth).expect(404);
    expect(res.body.code).toBe('not_found');
    await t.http.get('/v1/auth/me').set('Authorization', theirs.auth).expect(200);
    expect(await audit('auth.session.revoked', { target_id: theirs.sessionId })).toHaveLength(0);
    await t.http.delete('/v1/auth/sessions/ses_00000000000000000000000000').set('Authorization', mine.auth).expect(404);
    await t.http.delete('/v1/auth/sessions/not-a-session').set('Authorization', mine.auth).expect(422);
  });

  it('revoking the current session works like logout (cookie cleared)', async () => {
    const { email } = await newAccount();
    const { cookie, sessionId } = await signIn(t, { email }, { transport: 'cookie' });
    const res = await t.http.delete(`/v1/auth/sessions/${sessionId}`).set('Cookie', cookie).set('Origin', ORIGIN).expect(204);
    expect(String(res.headers['set-cookie'])).toMatch(/^session=;.*Max-Age=0/);
    await t.http.get('/v1/auth/me').set('Cookie', cookie).expect(401);
    expect((await audit('auth.session.revoked', { target_id: sessionId }))[0].data).toMatchObject({ current: true });
  });
});

describe('expiry (injectable clock)', () => {
  it('ends a session after 14 idle days; use keeps it alive', async () => {
    const { email } = await newAccount();
    const idle = await signIn(t, { email });
    const busy = await signIn(t, { email });
    t.clock.advance(13 * DAY);
    await t.http.get('/v1/auth/me').set('Authorization', busy.auth).expect(200);
    t.clock.advance(13 * DAY);
    // 26 days since sign-in, 13 since last use: still alive. The idle one is not.
    await t.http.get('/v1/auth/me').set('Authorization', busy.auth).expect(200);
    await t.http.get('/v1/auth/me').set('Authorization', idle.auth).expect(401);
    const list = await t.http.get('/v1/auth/sessions').set('Authorization', busy.auth).expect(200);
    expect(list.body.items.map((s: any) => s.id)).toEqual([busy.sessionId]);
    expect(Date.parse(list.body.items[0].last_seen_at)).toBe(t.clock.now.getTime());
    t.clock.advance(14 * DAY + 1000);
    await t.http.get('/v1/auth/me').set('Authorization', busy.auth).expect(401);
  });

  it('ends a session 90 days after sign-in however often it is used', async () => {
    const { email } = await newAccount();
    const s = await signIn(t, { email });
    for (let day = 0; day < 84; day += 12) {
      t.clock.advance(12 * DAY);
      await t.http.get('/v1/auth/me').set('Authorization', s.auth).expect(200);
    }
    t.clock.advance(6 * DAY + 1000); // 90 days and a second
    await t.http.get('/v1/auth/me').set('Authorization', s.auth).expect(401);
    // A fresh sign-in works.
    await signIn(t, { email });
  });
});

describe('expires_at and the cookie Max-Age: when the session really ends', () => {
  const IDLE_MS = 14 * DAY;
  const maxAgeOf = (setCookie: unknown) => Number(/Max-Age=(\d+)/.exec(String(setCookie))?.[1]);

  it('is the idle expiry at sign-in (14 days, not the 90-day absolute one), in the body and the cookie', async () => {
    const { email } = await newAccount();
    const res = await t.http.post('/v1/auth/login').send({ email, password: PASSWORD }).expect(200);
    const now = t.clock.now.getTime();
    expect(Date.parse(res.body.session.expires_at)).toBe(now + IDLE_MS);
    expect(maxAgeOf(res.headers['set-cookie'])).toBe(IDLE_MS / 1000);
    const bearer = await t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' }).expect(200);
    expect(Date.parse(bearer.body.session.expires_at)).toBe(now + IDLE_MS);
  });

  it('slides with use: the list says so, and the cookie is set again only when the server extends the session', async () => {
    const { email } = await newAccount();
    const { cookie, sessionId } = await signIn(t, { email }, { transport: 'cookie' });
    const signedInAt = t.clock.now.getTime();
    // Within the minute the server does not record use: no new cookie, the same expiry.
    t.clock.advance(30_000);
    const soon = await t.http.get('/v1/auth/sessions').set('Cookie', cookie).expect(200);
    expect(soon.headers['set-cookie']).toBeUndefined();
    expect(Date.parse(soon.body.items[0].expires_at)).toBe(signedInAt + IDLE_MS);

    t.clock.advance(3 * DAY);
    const later = await t.http.get('/v1/auth/sessions').set('Cookie', cookie).expect(200);
    const usedAt = t.clock.now.getTime();
    expect(later.body.items[0]).toMatchObject({ id: sessionId, current: true });
    expect(Date.parse(later.body.items[0].last_seen_at)).toBe(usedAt);
    expect(Date.parse(later.body.items[0].expires_at)).toBe(usedAt + IDLE_MS);
    // The same session cookie, with the new Max-Age.
    const refreshed = String(later.headers['set-cookie']);
    expect(refreshed.split(';')[0]).toBe(cookie);
    expect(refreshed).toMatch(/; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    expect(maxAgeOf(refreshed)).toBe(IDLE_MS / 1000);
    // The very next request is within the minute again.
    const next = await t.http.get('/v1/auth/me').set('Cookie', cookie).expect(200);
    expect(next.headers['set-cookie']).toBeUndefined();
  });

  it('never sets the cookie again for a bearer session, and a sign-out clears it instead of refreshing it', async () => {
    const { email } = await newAccount();
    const bearer = await signIn(t, { email });
    t.clock.advance(2 * DAY);
    const me = await t.http.get('/v1/auth/me').set('Authorization', bearer.auth).expect(200);
    expect(me.headers['set-cookie']).toBeUndefined();

    const { cookie } = await signIn(t, { email }, { transport: 'cookie' });
    t.clock.advance(2 * DAY);
    const out = await t.http.post('/v1/auth/logout').set('Cookie', cookie).set('Origin', ORIGIN).expect(204);
    expect(out.headers['set-cookie']).toEqual(['session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0']);
  });

  it('is the absolute expiry once that comes before the idle one', async () => {
    const { email } = await newAccount();
    const { cookie } = await signIn(t, { email }, { transport: 'cookie' });
    const signedInAt = t.clock.now.getTime();
    const absoluteMs = t.ctx.config.session.absoluteLifetimeSeconds * 1000;
    for (let day = 0; day < 72; day += 12) {
      t.clock.advance(12 * DAY);
      await t.http.get('/v1/auth/me').set('Cookie', cookie).expect(200);
    }
    // Day 84: the idle expiry (day 98) is past the absolute one (day 90).
    t.clock.advance(12 * DAY);
    const res = await t.http.get('/v1/auth/sessions').set('Cookie', cookie).expect(200);
    expect(Date.parse(res.body.items[0].expires_at)).toBe(signedInAt + absoluteMs);
    expect(maxAgeOf(res.headers['set-cookie'])).toBe((signedInAt + absoluteMs - t.clock.now.getTime()) / 1000);
  });

  it('follows the idle timeout in force (SESSION_IDLE_TIMEOUT_SECONDS as its default)', async () => {
    const short = await startTestApp({ BCRYPT_COST: '4', SESSION_IDLE_TIMEOUT_SECONDS: '7200' });
    try {
      const email = `short-idle-${Date.now()}@example.com`;
      await insertUser(short.ctx.db, { email, name: 'Grace', passwordHash: await hashPassword(PASSWORD, 4) });
      const res = await short.http.post('/v1/auth/login').send({ email, password: PASSWORD }).expect(200);
      expect(Date.parse(res.body.session.expires_at)).toBe(short.clock.now.getTime() + 7200 * 1000);
      expect(maxAgeOf(res.headers['set-cookie'])).toBe(7200);
    } finally {
      await short.close();
    }
  });
});
