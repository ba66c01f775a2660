// Keys expire: the retention policy `idempotency_keys` (GET /ops/retention) deletes the expired
// ones, and the period (`retention.idempotency_keys`, 24 hours by default) applies to the keys
// recorded after a change.
import type { Db } from '../../src/platform/database';
import { ownerDatabase } from '../support/orgs';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { newKey, send } from './requests';

let t: TestApp;
let owner: Db;
let operator: Awaited<ReturnType<typeof signedInUser>>;
beforeAll(async () => {
  t = await startTestApp();
  owner = ownerDatabase(t);
  operator = await signedInUser(t.ctx, { operator: true });
});
afterAll(async () => {
  await owner?.destroy();
  await t?.close();
});

const HOUR_MS = 3600_000;
const at = (hoursFromNow: number) => new Date(t.clock.now.getTime() + hoursFromNow * HOUR_MS);
const policy = async () => (await t.http.get('/ops/retention').set('Authorization', operator.auth).expect(200)).body.items.find((p: { name: string }) => p.name === 'idempotency_keys');

it('deletes the expired keys and keeps the live ones; GET /ops/retention shows the policy and its count', async () => {
  expect(await policy()).toMatchObject({ keep: '24h0m0s', setting: 'retention.idempotency_keys', last_run_at: null, last_deleted: null });
  const user = await signedInUser(t.ctx);
  const row = (key: string, expiresInHours: number) => ({
    user_id: user.userId,
    key,
    fingerprint: Buffer.alloc(32),
    status: 201,
    headers: {},
    body: Buffer.from('{}'),
    created_at: at(expiresInHours - 24),
    expires_at: at(expiresInHours),
  });
  await owner('idempotency_keys').insert([row('expired-long-ago', -48), row('expired-just-now', 0), row('live', 1)]);

  const deleted = await t.ctx.services.retention.enforce();
  expect(deleted.idempotency_keys).toBe(2);
  expect((await owner('idempotency_keys').where({ user_id: user.userId })).map((r) => r.key)).toEqual(['live']);
  expect(await policy()).toMatchObject({ keep: '24h0m0s', last_deleted: 2 });
});

it('gives keys recorded after a change of the period the new one', async () => {
  const { body: setting } = await t.http.get('/ops/settings/retention.idempotency_keys').set('Authorization', operator.auth).expect(200);
  expect(setting).toMatchObject({ value: '24h0m0s', type: 'duration' });
  await t.http
    .put('/ops/settings/retention.idempotency_keys')
    .set('Authorization', operator.auth)
    .send({ value: '2h', version: setting.version, reason: 'short keys' })
    .expect(200);
  await t.http.put('/ops/settings/retention.idempotency_keys').set('Authorization', operator.auth).send({ value: '30m', version: setting.version + 1, reason: 'too short' }).expect(422);
  const user = await signedInUser(t.ctx, { verified: true });
  const key = newKey();
  await send(t, { method: 'post', url: '/v1/orgs', auth: user.auth, body: { name: 'Short Keys Inc' } }, key).expect(201);
  const [row] = await owner('idempotency_keys').where({ user_id: user.userId });
  expect(row.expires_at.getTime() - row.created_at.getTime()).toBe(2 * HOUR_MS);
});

it('deletes a user’s keys with the account (DELETE /v1/auth/me)', async () => {
  const user = await signedInUser(t.ctx, { password: 'a long and uncommon passphrase 42' });
  await send(t, { method: 'post', url: '/v1/auth/verify-email/resend', auth: user.auth }, newKey()).expect(202);
  expect(await owner('idempotency_keys').where({ user_id: user.userId })).toHaveLength(1);
  await t.http.delete('/v1/auth/me').set('Authorization', user.auth).send({ password: 'a long and uncommon passphrase 42' }).expect(204);
  expect(await owner('idempotency_keys').where({ user_id: user.userId })).toEqual([]);
});
