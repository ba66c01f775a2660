// What a key means (README "Safe retries"): another request with the same key is told apart by
// its fingerprint, another user's key is unrelated, errors record nothing, an expired key is new
// again, a malformed key is refused, and operations that take no key ignore the header.
import { capturingLogger, linesWith } from '../support/logs';
import { orgWithOwner } from '../support/orgs';
import { signedInUser } from '../support/users';
import { appForFile, newKey, send, type KeyedCall } from './requests';

const lines: string[] = [];
const app = appForFile({ LOG_LEVEL: 'info' }, { logger: capturingLogger(lines) });

let n = 0;
async function projectWrite(name = `Project ${++n}`): Promise<KeyedCall & { orgId: string }> {
  const { owner: founder, org } = await orgWithOwner(app.t);
  return { method: 'post', url: `/v1/orgs/${org.id}/projects`, auth: founder.auth, body: { name }, orgId: org.id };
}
const projectsOf = (orgId: string) => app.owner('projects').where({ org_id: orgId }).orderBy('id');
const keysOf = (key: string) => app.owner('idempotency_keys').where({ key: key.replace(/^"|"$/g, '') });

it('answers 422 idempotency_key_reused to the same key with a different request, and changes nothing', async () => {
  const call = await projectWrite('First');
  const key = newKey();
  await send(app.t, call, key).expect(201);
  const other = await send(app.t, { ...call, body: { name: 'Second' } }, key).expect(422);
  expect(other.body).toMatchObject({ code: 'idempotency_key_reused', errors: [{ location: 'header.Idempotency-Key' }] });
  // Another path with the same key is another request too.
  const { org } = await orgWithOwner(app.t);
  await send(app.t, { ...call, url: `/v1/orgs/${org.id}/projects` }, key).expect(422);
  expect((await projectsOf(call.orgId)).map((p) => p.name)).toEqual(['First']);
  // Member order in the body does not make another request.
  const both = { ...call, body: { name: 'Both', description: 'd' } };
  const key2 = newKey();
  await send(app.t, both, key2).expect(201);
  const replay = await send(app.t, { ...call, body: { description: 'd', name: 'Both' } }, key2).expect(201);
  expect(replay.headers['idempotent-replayed']).toBe('true');
});

it("keeps keys per user: another user's request with the same key runs on its own", async () => {
  const key = newKey();
  const mine = await projectWrite('Same name');
  const theirs = await projectWrite('Same name');
  const a = await send(app.t, mine, key).expect(201);
  const b = await send(app.t, theirs, key).expect(201);
  expect(b.headers['idempotent-replayed']).toBeUndefined();
  expect(b.body.id).not.toBe(a.body.id);
  expect(await keysOf(key)).toHaveLength(2);
});

it('records nothing for an error: a corrected retry with the same key runs', async () => {
  const call = await projectWrite('Taken');
  await send(app.t, call).expect(201);
  const key = newKey();
  // Refused by the contract (422), then by the domain (409): neither is recorded.
  await send(app.t, { ...call, body: { name: 'x'.repeat(500) } }, key).expect(422);
  expect((await send(app.t, call, key).expect(409)).body.code).toBe('project_name_taken');
  // A caller who may not: 404, recorded for nobody.
  const stranger = await signedInUser(app.t.ctx, { verified: true });
  await send(app.t, { ...call, auth: stranger.auth, body: { name: 'Fresh' } }, key).expect(404);
  expect(await keysOf(key)).toEqual([]);
  const corrected = await send(app.t, { ...call, body: { name: 'Fresh' } }, key).expect(201);
  expect(corrected.headers['idempotent-replayed']).toBeUndefined();
  expect((await projectsOf(call.orgId)).map((p) => p.name)).toEqual(['Taken', 'Fresh']);
});

it('runs every request without the header, as before', async () => {
  const user = await signedInUser(app.t.ctx, { verified: true });
  const call: KeyedCall = { method: 'post', url: '/v1/orgs', auth: user.auth, body: { name: 'Twice Inc' } };
  const first = await send(app.t, call).expect(201);
  const second = await send(app.t, call).expect(201);
  expect(second.body.id).not.toBe(first.body.id);
  expect(second.headers['idempotent-replayed']).toBeUndefined();
  expect(await app.owner('idempotency_keys').where({ user_id: user.userId })).toEqual([]);
});

it('treats an expired key as new: the request runs again and the key is recorded afresh', async () => {
  const user = await signedInUser(app.t.ctx, { verified: true });
  const call: KeyedCall = { method: 'post', url: '/v1/orgs', auth: user.auth, body: { name: 'Expiring Inc' } };
  const key = newKey();
  const first = await send(app.t, call, key).expect(201);
  const [row] = await keysOf(key);
  expect(row.expires_at.getTime() - row.created_at.getTime()).toBe(24 * 3600_000);
  await keysOf(key).update({ expires_at: new Date(app.t.clock.now.getTime() - 1) });
  const again = await send(app.t, call, key).expect(201);
  expect(again.headers['idempotent-replayed']).toBeUndefined();
  expect(again.body.id).not.toBe(first.body.id);
  const [renewed] = await keysOf(key);
  expect(renewed.body.toString()).toBe(again.text);
  expect(renewed.expires_at.getTime()).toBeGreaterThan(app.t.clock.now.getTime());
});

it('takes the key quoted (a Structured Field string) or bare, as one key; refuses anything else naming the header', async () => {
  const call = await projectWrite('Quoted');
  await send(app.t, call, '"key-1 with \\"quotes\\""').expect(201);
  expect((await send(app.t, call, '"key-1 with \\"quotes\\""').expect(201)).headers['idempotent-replayed']).toBe('true');
  const bare = await projectWrite('Bare');
  await send(app.t, bare, 'bare-key-2').expect(201);
  expect((await send(app.t, bare, '"bare-key-2"').expect(201)).headers['idempotent-replayed']).toBe('true');
  expect(await app.owner('idempotency_keys').whereIn('key', ['key-1 with "quotes"', 'bare-key-2'])).toHaveLength(2);

  for (const bad of ['"unterminated', '""', 'two words', `"${'k'.repeat(256)}"`, '"tab\\x"', '"a", "b"']) {
    const res = await send(app.t, { ...call, body: { name: 'Never' } }, bad).expect(422);
    expect({ bad, code: res.body.code, at: res.body.errors[0].location }).toEqual({ bad, code: 'validation_failed', at: 'header.Idempotency-Key' });
  }
  expect((await projectsOf(call.orgId)).map((p) => p.name)).toEqual(['Quoted']);
});

it('ignores the header where the operation takes no key (the contract does not declare it there)', async () => {
  const operator = await signedInUser(app.t.ctx, { operator: true });
  const key = newKey();
  const pause: KeyedCall = { method: 'post', url: '/ops/queues/default/pause', auth: operator.auth };
  const paused = await send(app.t, pause, key).expect(200);
  expect(paused.body.paused).toBe(true);
  // The same key with another operation would be 422 if it were read.
  const resumed = await send(app.t, { ...pause, url: '/ops/queues/default/resume' }, key).expect(200);
  expect(resumed.body.paused).toBe(false);
  expect(resumed.headers['idempotent-replayed']).toBeUndefined();
  expect(await keysOf(key)).toEqual([]);
});

it('logs a replay with its request id; the replay counts no rate limit', async () => {
  const { owner: founder, org } = await orgWithOwner(app.t);
  const call: KeyedCall = { method: 'post', url: `/v1/orgs/${org.id}/invitations`, auth: founder.auth, body: { email: 'logged@example.com', role: 'member' } };
  const key = newKey();
  const first = await send(app.t, call, key).expect(201);
  expect(first.headers.ratelimit).toMatch(/^"invitations.org";r=49;/);
  const again = await send(app.t, call, key).set('X-Request-Id', 'req_replayed_request_1').expect(201);
  expect(again.headers.ratelimit).toBeUndefined();
  expect(linesWith(lines, 'idempotent replay')).toEqual(
    expect.arrayContaining([expect.objectContaining({ level: 'info', request_id: 'req_replayed_request_1', operation_id: 'createInvitation', status: 201 })]),
  );
  // Counted once: the next invitation finds 48 left.
  const next = await send(app.t, { ...call, body: { email: 'next@example.com', role: 'member' } }, newKey()).expect(201);
  expect(next.headers.ratelimit).toMatch(/^"invitations.org";r=48;/);
});

it('lets browser apps send the header and read Idempotent-Replayed (CORS, from the contract)', async () => {
  const origin = app.t.ctx.config.appOrigins[0]!;
  const preflight = await app.t.http.options('/v1/orgs').set('Origin', origin).set('Access-Control-Request-Method', 'POST').expect(204);
  expect(preflight.headers['access-control-allow-headers']!.toLowerCase().split(', ')).toContain('idempotency-key');
  const res = await app.t.http.get('/v1/ping').set('Origin', origin).expect(200);
  expect(res.headers['access-control-expose-headers']!.split(', ')).toContain('Idempotent-Replayed');
});
