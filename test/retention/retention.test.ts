// Retention policies: GET /ops/retention describes them (period in force, last run, counts), and
// service.retention.enforce deletes exactly what is past each period — with the periods an
// operator set at runtime — and nothing else.
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { waitFor } from '../support/wait';

const DAY_MS = 24 * 3600 * 1000;
let t: TestApp;
let operator: Awaited<ReturnType<typeof signedInUser>>;
beforeAll(async () => {
  t = await startTestApp({}, { workers: true });
  operator = await signedInUser(t.ctx, { operator: true });
});
afterAll(() => t?.close());

const ago = (days: number) => new Date(t.clock.now.getTime() - days * DAY_MS);
let n = 0;
const fakeId = (prefix: string) => `${prefix}_${String(++n).padStart(6, '0')}${Math.random().toString(36).slice(2, 22).padEnd(20, '0')}`.slice(0, prefix.length + 27);

async function setting(key: string, value: unknown) {
  const { body } = await t.http.get(`/ops/settings/${key}`).set('Authorization', operator.auth).expect(200);
  await t.http.put(`/ops/settings/${key}`).set('Authorization', operator.auth).send({ value, version: body.version, reason: 'retention test' }).expect(200);
}

async function runRetention() {
  const res = await t.http.post('/ops/jobs/definitions/service.retention.enforce/run').set('Authorization', operator.auth).expect(202);
  await waitFor('the retention run to complete', async () => (await t.ctx.db('job_runs').where({ id: res.body.id }).first())?.state === 'completed');
}

const policies = async () => {
  const res = await t.http.get('/ops/retention').set('Authorization', operator.auth).expect(200);
  return Object.fromEntries(res.body.items.map((p: any) => [p.name, p]));
};

it('lists every policy sorted by name, with its period in force and the next run, before any run', async () => {
  const res = await t.http.get('/ops/retention').set('Authorization', operator.auth).expect(200);
  expect(res.body.items.map((p: any) => p.name)).toEqual(['audit_events', 'deleted_organisations', 'expired_codes', 'expired_sessions', 'idempotency_keys', 'instances', 'job_runs', 'sent_mail']);
  expect(res.body.next_cursor).toBeNull();
  expect(res.body.items[0]).toMatchObject({ name: 'audit_events', keep: '8760h0m0s', setting: 'retention.audit_events', last_run_at: null, last_deleted: null });
  expect(Date.parse(res.body.items[0].next_run_at)).toBeGreaterThan(Date.now() - 1000);
  await t.http.get('/ops/retention').expect(401);
});

it('deletes exactly what is past each period in force, and records the counts per policy', async () => {
  await setting('retention.audit_events', '240h'); // 10 days
  await setting('retention.job_runs', '48h');
  await setting('retention.instances', '72h');

  // Audit events: 11 and 10.5 days old go, 9.5 days old stays.
  const event = (daysAgo: number) => t.ctx.db('audit_events').insert({ id: fakeId('aud'), at: ago(daysAgo), action: 'test.retention', actor_kind: 'system' }).returning('id');
  const [[oldEvent], [olderEvent], [keptEvent]] = await Promise.all([event(10.5), event(11), event(9.5)]);

  // Finalized job runs: 2.5 days go, 1.5 stay; an unfinished old run stays.
  const run = (finalizedDaysAgo: number | null) =>
    t.ctx.db('job_runs').insert({ kind: 'service.mail.send', queue: 'mail', priority: 0, state: finalizedDaysAgo === null ? 'retryable' : 'completed', max_attempts: 3, timeout_ms: 1000, actor_kind: 'system', created_at: ago(5), scheduled_at: ago(5), handed_over_at: ago(5), finalized_at: finalizedDaysAgo === null ? null : ago(finalizedDaysAgo) }).returning('id');
  const [[oldRun], [keptRun], [waitingRun]] = await Promise.all([run(2.5), run(1.5), run(null)]);

  // Instances: stopped 4 days ago and silent (crashed) 4 days ago go; stopped 2 days ago stays.
  const [release] = await t.ctx.db('releases').insert({ id: fakeId('rel'), version: '0.0.1-test', commit: 'retention', first_seen_at: ago(10), last_seen_at: ago(2) }).returning('id');
  const instance = (heartbeatDaysAgo: number, stopped: boolean) =>
    t.ctx.db('instances').insert({ id: fakeId('ins'), hostname: 'h', pid: 1, release_id: release!.id, started_at: ago(10), last_heartbeat_at: ago(heartbeatDaysAgo), stopped_at: stopped ? ago(heartbeatDaysAgo) : null }).returning('id');
  const [[stoppedOld], [crashedOld], [stoppedRecent]] = await Promise.all([instance(4, true), instance(4, false), instance(2, true)]);

  await runRetention();

  const left = async (table: string, ids: { id: string | number }[]) => (await t.ctx.db(table).whereIn('id', ids.map((r) => r.id)).select('id')).map((r: any) => String(r.id)).sort();
  expect(await left('audit_events', [oldEvent, olderEvent, keptEvent])).toEqual([keptEvent.id]);
  expect(await left('job_runs', [oldRun, keptRun, waitingRun])).toEqual([String(keptRun.id), String(waitingRun.id)].sort());
  expect(await left('instances', [stoppedOld, crashedOld, stoppedRecent])).toEqual([stoppedRecent.id]);

  const after = await policies();
  expect(after.audit_events).toMatchObject({ keep: '240h0m0s', last_deleted: expect.any(Number) });
  expect(after.audit_events.last_deleted).toBeGreaterThanOrEqual(2);
  expect(after.job_runs).toMatchObject({ keep: '48h0m0s', last_deleted: 1 });
  expect(after.instances).toMatchObject({ keep: '72h0m0s', last_deleted: 2 });
  for (const p of Object.values(after) as any[]) {
    expect(p.last_run_at).not.toBeNull();
    expect(p.last_deleted).not.toBeNull();
  }
});

it('follows a period changed after the last run on the next run', async () => {
  const [event] = await t.ctx.db('audit_events').insert({ id: fakeId('aud'), at: ago(5), action: 'test.retention', actor_kind: 'system' }).returning('id');
  await runRetention();
  expect(await t.ctx.db('audit_events').where({ id: event!.id })).toHaveLength(1);
  await setting('retention.audit_events', '96h');
  await runRetention();
  expect(await t.ctx.db('audit_events').where({ id: event!.id })).toHaveLength(0);
  expect((await policies()).audit_events.keep).toBe('96h0m0s');
});

it('expired_codes also prunes social sign-in states and nonces expired, and notification ids received, past the period', async () => {
  await setting('retention.expired_codes', '24h');
  const hash = () => Buffer.from(Math.random().toString(36).repeat(4));
  const state = (expiredDaysAgo: number) =>
    t.ctx.db('social_states').insert({ state_hash: hash(), binding_hash: hash(), provider: 'provider_a', intent: 'login', redirect_to: 'https://app/x', created_at: ago(expiredDaysAgo + 0.01), expires_at: ago(expiredDaysAgo) }).returning('state_hash');
  const nonce = (expiredDaysAgo: number) => t.ctx.db('social_nonces').insert({ nonce_hash: hash(), provider: 'provider_b', created_at: ago(expiredDaysAgo + 0.01), expires_at: ago(expiredDaysAgo) }).returning('nonce_hash');
  const notification = (daysAgo: number) => t.ctx.db('social_notifications').insert({ provider: 'provider_b', jti: `jti-${Math.random()}`, received_at: ago(daysAgo) }).returning('jti');
  const [[oldState], [keptState], [oldNonce], [keptNonce], [oldNote], [keptNote]] = await Promise.all([state(1.5), state(0.5), nonce(2), nonce(0.2), notification(3), notification(0.5)]);

  await runRetention();

  expect(await t.ctx.db('social_states').whereIn('state_hash', [oldState.state_hash, keptState.state_hash]).pluck('state_hash')).toEqual([keptState.state_hash]);
  expect(await t.ctx.db('social_nonces').whereIn('nonce_hash', [oldNonce.nonce_hash, keptNonce.nonce_hash]).pluck('nonce_hash')).toEqual([keptNonce.nonce_hash]);
  expect(await t.ctx.db('social_notifications').whereIn('jti', [oldNote.jti, keptNote.jti]).pluck('jti')).toEqual([keptNote.jti]);
});
