// The typed test client (test/support/api-client.ts, `t.api`) and the helpers built on it
// (accounts.ts, orgs.ts): requests reach the app as sent (bodies, query, headers, cookies), answers
// come back as openapi-fetch reads them (JSON, compressed or not, Problems, 204), and an answer the
// contract does not describe fails the call exactly as it fails `t.http`.
import express from 'express';
import { apiClient, expectStatus } from '../support/api-client';
import { PASSWORD, signIn, signUp, uniqueEmail } from '../support/accounts';
import { createInvitation, createOrg, createProject, deleteOrg, orgWith, orgWithOwner, ownerDatabase } from '../support/orgs';
import { contractClient, startTestApp, type TestApp } from '../support/test-app';
import type { Db } from '../../src/platform/database';

const ORIGIN = 'https://app.example.com';
let t: TestApp;
let owner: Db;
beforeAll(async () => {
  t = await startTestApp({ BCRYPT_COST: '4', APP_ORIGINS: ORIGIN, RATE_LIMIT_REGISTER_PER_MINUTE: '1000', RATE_LIMIT_LOGIN_PER_MINUTE: '1000' });
  owner = ownerDatabase(t);
});
afterAll(async () => {
  await owner?.destroy();
  await t?.close();
});

describe('t.api', () => {
  it('answers typed data with the response (its headers as sent)', async () => {
    const { data, error, response } = await t.api.GET('/v1/ping');
    expect(error).toBeUndefined();
    expect(data?.pong).toBe(true);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('sends the JSON body as serialised and reads a compressed answer', async () => {
    // Over 1 KiB: compressed when the client accepts it (as supertest does), which t.http shows.
    const message = `Grüße, ${'é'.repeat(600)} — fin`;
    const raw = await t.http.post('/v1/echo').send({ message }).expect(200);
    expect(raw.headers['content-encoding']).toMatch(/^(gzip|br|deflate)$/);
    const { data, response } = await t.api.POST('/v1/echo', { body: { message } });
    expect(data).toEqual({ message, request_id: response.headers.get('x-request-id') });
  });

  it('reads a Problem as the typed error', async () => {
    const { data, error, response } = await t.api.POST('/v1/echo', { body: { message: '' } });
    expect(data).toBeUndefined();
    expect(response.status).toBe(422);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(error).toMatchObject({ code: 'validation_failed', errors: [{ location: 'body.message' }] });
  });

  it('sends headers, query parameters and cookies; a 204 has no data', async () => {
    const a = await signUp(t);
    await signIn(t, a);
    await signIn(t, a);
    const page = await t.api.GET('/v1/auth/sessions', { headers: { Authorization: a.auth }, params: { query: { limit: 2 } } });
    expect(page.data?.items).toHaveLength(2);
    expect(page.data?.next_cursor).toEqual(expect.any(String));

    const c = await signUp(t, { transport: 'cookie' });
    expect(c.cookie).toMatch(/^(__Host-)?session=[\w-]+$/);
    const me = await expectStatus(t.api.GET('/v1/auth/me', { headers: { Cookie: c.cookie } }), 200);
    expect(me).toMatchObject({ id: c.userId, email: c.email });

    const out = await t.api.POST('/v1/auth/logout', { headers: { Authorization: a.auth } });
    expect(out.response.status).toBe(204);
    expect(out.data).toBeUndefined();
    expect(out.error).toBeUndefined();
    expect((await t.api.GET('/v1/auth/me', { headers: { Authorization: a.auth } })).response.status).toBe(401);
  });

  it('sends a request header such as User-Agent', async () => {
    const a = await signUp(t, { headers: { 'User-Agent': 'selftest/1' } });
    const s = await signIn(t, a, { headers: { 'User-Agent': 'selftest/2' } });
    const sessions = await expectStatus(t.api.GET('/v1/auth/sessions', { headers: { Authorization: s.auth } }), 200);
    expect(sessions.items.map((i) => i.user_agent).sort()).toEqual(['selftest/1', 'selftest/2']);
  });

  it('expectStatus names the path, the status and the Problem of an unexpected answer', async () => {
    await expect(expectStatus(t.api.GET('/v1/auth/me'), 200)).rejects.toThrow(/\/v1\/auth\/me: expected 200, got 401: .*"code":"unauthenticated"/);
  });
});

describe('contract checks', () => {
  /** An app answering GET /v1/ping with what `answer` sends, through the typed client. */
  const pingOf = (answer: (res: express.Response) => void) => {
    const app = express();
    app.get('/v1/ping', (_req, res) => answer(res));
    return apiClient(contractClient(app)).GET('/v1/ping');
  };
  const requestId = 'req_0123456789abcdef';

  it('fails a call whose answer has no X-Request-Id', async () => {
    await expect(pingOf((res) => void res.json({ pong: true, time: new Date().toISOString() }))).rejects.toThrow(/missing or malformed X-Request-Id/);
  });

  it('fails a call whose body does not match the schema', async () => {
    await expect(pingOf((res) => void res.set('X-Request-Id', requestId).json({ pong: 'yes' }))).rejects.toThrow(/GET \/v1\/ping → 200: body does not match ping 200/);
  });

  it('fails a call with a status the operation does not document', async () => {
    await expect(pingOf((res) => void res.status(418).set('X-Request-Id', requestId).json({}))).rejects.toThrow(/status 418 is not documented for ping/);
  });

  it('passes a call the contract describes', async () => {
    const { data } = await pingOf((res) => void res.set('X-Request-Id', requestId).json({ pong: true, time: '2026-01-01T00:00:00Z' }));
    expect(data).toEqual({ pong: true, time: '2026-01-01T00:00:00Z' });
  });
});

describe('accounts', () => {
  it('signUp: a new account with a password, signed in with a bearer token; verified on request', async () => {
    const email = uniqueEmail('Selftest');
    const a = await signUp(t, { email, name: 'Ada Lovelace' });
    expect(a.user).toMatchObject({ id: a.userId, email: email.toLowerCase(), name: 'Ada Lovelace', email_verified: false });
    expect(a.password).toBe(PASSWORD);
    expect(await expectStatus(t.api.GET('/v1/auth/me', { headers: { Authorization: a.auth } }), 200)).toMatchObject({ id: a.userId, email_verified: false });

    const v = await signUp(t, { verified: true });
    expect((await expectStatus(t.api.GET('/v1/auth/me', { headers: { Authorization: v.auth } }), 200)).email_verified).toBe(true);
  });

  it('signIn: a new session with the password; a wrong one fails the helper', async () => {
    const a = await signUp(t, { password: 'another long passphrase 7' });
    const s = await signIn(t, a);
    expect(s.sessionId).not.toBe(a.sessionId);
    expect(s.user.id).toBe(a.userId);
    await expect(signIn(t, { email: a.email, password: 'not it at all' })).rejects.toThrow(/expected 200, got 401/);
  });
});

describe('organisations', () => {
  it('orgWith: an organisation with its founder as owner and a member of the role', async () => {
    const { org, founder, user } = await orgWith(t, owner, 'admin', { name: 'Selftest Inc' });
    expect(org).toMatchObject({ name: 'Selftest Inc', role: 'owner', member_count: 1 });
    const members = await expectStatus(t.api.GET('/v1/orgs/{orgId}/members', { headers: { Authorization: founder.auth }, params: { path: { orgId: org.id } } }), 200);
    expect(members.items.map((m) => [m.user_id, m.role]).sort()).toEqual(
      [
        [founder.userId, 'owner'],
        [user.userId, 'admin'],
      ].sort(),
    );
  });

  it('createOrg with a slug, createProject, createInvitation, deleteOrg', async () => {
    const { owner: o } = await orgWithOwner(t);
    const slug = `selftest-${Date.now()}`;
    const org = await createOrg(t, o, { name: 'Slugged', slug });
    expect(org).toMatchObject({ name: 'Slugged', slug });
    expect(await createProject(t, o.auth, org.id, { name: 'Site' })).toMatchObject({ org_id: org.id, name: 'Site', created_by: o.userId });
    expect(await createInvitation(t, o, org.id, { email: 'Guest@Example.com', role: 'member' })).toMatchObject({ email: 'guest@example.com', role: 'member', invited_by: o.userId });
    expect((await deleteOrg(t, o, org.id)).deleted_at).not.toBeNull();
  });
});
