// Runtime settings through /ops/settings: the typed catalogue, where each value comes from,
// validation by type (422 at body.value), optimistic versions (409), history, reset, audit; a
// change reaching a second instance within a second (pub/sub) and without Redis (periodic
// reload); and the settings really driving behaviour.
import { loadConfig, ConfigError } from '../../src/config';
import { createRedis } from '../../src/platform/redis';
import { RuntimeSettings } from '../../src/settings/runtime';
import { startPeer, startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { waitFor } from '../support/wait';
import { freePort } from '../support/ports';

let t: TestApp;
let operator: Awaited<ReturnType<typeof signedInUser>>;
beforeAll(async () => {
  t = await startTestApp({ BCRYPT_COST: '4', AUTH_PASSWORD_MIN_LENGTH: '10', RATE_LIMIT_REGISTER_PER_MINUTE: '1000' });
  operator = await signedInUser(t.ctx, { operator: true });
});
afterAll(() => t?.close());

const get = (key: string) => t.http.get(`/ops/settings/${key}`).set('Authorization', operator.auth);
const put = (key: string, body: object) => t.http.put(`/ops/settings/${key}`).set('Authorization', operator.auth).send(body);
const reset = (key: string, body: object) => t.http.delete(`/ops/settings/${key}`).set('Authorization', operator.auth).send(body);

/** Changes a setting from whatever version it is at. */
async function change(key: string, value: unknown, reason = 'test') {
  const { body } = await get(key).expect(200);
  return (await put(key, { value, version: body.version, reason }).expect(200)).body;
}

async function resetToDefault(key: string) {
  const { body } = await get(key).expect(200);
  await reset(key, { version: body.version, reason: 'test cleanup' }).expect(200);
}

describe('the catalogue', () => {
  it('lists every setting sorted by key, with its default, type and where its value comes from', async () => {
    const res = await t.http.get('/ops/settings').set('Authorization', operator.auth).expect(200);
    const keys = res.body.items.map((s: any) => s.key);
    expect(keys).toEqual([...keys].sort());
    expect(keys).toEqual(
      expect.arrayContaining([
        'auth.registration_enabled',
        'auth.password_min_length',
        'auth.session_idle_timeout',
        'maintenance_mode',
        'rate_limit.login_per_minute',
        'rate_limit.ip_per_minute',
        'retention.audit_events',
        'retention.job_runs',
        'retention.expired_sessions',
        'retention.expired_codes',
        'retention.deleted_organisations',
        'retention.instances',
        'retention.sent_mail',
      ]),
    );
    expect(res.body.next_cursor).toBeNull();
    const byKey = Object.fromEntries(res.body.items.map((s: any) => [s.key, s]));
    // From the environment (AUTH_PASSWORD_MIN_LENGTH=10 at start), from code, durations canonical.
    expect(byKey['auth.password_min_length']).toMatchObject({ value: 10, default: 10, type: 'integer', source: 'environment', environment_variable: 'AUTH_PASSWORD_MIN_LENGTH', modified: false, version: 1, updated_at: null, updated_by: null });
    expect(byKey['maintenance_mode']).toMatchObject({ value: false, default: false, type: 'boolean', source: 'code', environment_variable: 'MAINTENANCE_MODE' });
    expect(byKey['retention.audit_events']).toMatchObject({ value: '8760h0m0s', type: 'duration', source: 'code', environment_variable: null });
    expect(byKey['auth.session_idle_timeout']).toMatchObject({ value: '336h0m0s', environment_variable: 'SESSION_IDLE_TIMEOUT_SECONDS' });
  });

  it('answers 404 for a key not in the catalogue and 422 for a malformed key', async () => {
    await get('no.such_setting').expect(404);
    await get('Bad-Key').expect(422);
  });

  it('lets only operators in', async () => {
    const user = await signedInUser(t.ctx);
    await t.http.get('/ops/settings').expect(401);
    await t.http.get('/ops/settings').set('Authorization', user.auth).expect(403);
    await t.http.put('/ops/settings/maintenance_mode').set('Authorization', user.auth).send({ value: true, version: 1, reason: 'x' }).expect(403);
    await t.http.get('/ops/retention').set('Authorization', user.auth).expect(403);
  });

  it('refuses an environment variable that breaks a setting\'s rules at start', () => {
    expect(() => loadConfig({ NODE_ENV: 'test', AUTH_PASSWORD_MIN_LENGTH: '4' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'test', MAINTENANCE_MODE: 'yes' })).toThrow(/MAINTENANCE_MODE must be true or false/);
    expect(loadConfig({ NODE_ENV: 'test', SESSION_IDLE_TIMEOUT_SECONDS: '7200' }).settingDefaults.values['auth.session_idle_timeout']).toBe('2h0m0s');
  });
});

describe('changing a setting', () => {
  it('validates the value by the setting\'s type and rules, at body.value, with no coercion', async () => {
    const cases: [string, unknown, RegExp][] = [
      ['auth.password_min_length', '12', /must be an integer/],
      ['auth.password_min_length', 7, /from 8 to 128/],
      ['maintenance_mode', 'true', /must be a boolean/],
      ['auth.session_idle_timeout', '2 days', /duration such as/],
      ['auth.session_idle_timeout', '30m', /from 1h0m0s to 2160h0m0s/],
      ['retention.job_runs', 30, /must be a string/],
    ];
    for (const [key, value, message] of cases) {
      const res = await put(key, { value, version: 1, reason: 'test' }).expect(422);
      expect(res.body).toMatchObject({ code: 'invalid_setting_value', errors: [{ location: 'body.value', message: expect.stringMatching(message) }] });
    }
    const missingReason = await put('maintenance_mode', { value: true, version: 1 }).expect(422);
    expect(missingReason.body.code).toBe('validation_failed');
  });

  it('stores an override with a new version, a history entry and an audit event; the same value again changes nothing', async () => {
    const before = await get('auth.password_min_length').expect(200);
    const res = await put('auth.password_min_length', { value: 12, version: before.body.version, reason: 'Security review' }).expect(200);
    expect(res.body).toMatchObject({ value: 12, default: 10, modified: true, source: 'override', version: before.body.version + 1, updated_by: operator.userId });
    expect(Date.parse(res.body.updated_at)).not.toBeNaN();
    const again = await put('auth.password_min_length', { value: 12, version: res.body.version, reason: 'again' }).expect(200);
    expect(again.body.version).toBe(res.body.version);

    const history = await t.http.get('/ops/settings/auth.password_min_length/history').set('Authorization', operator.auth).expect(200);
    expect(history.body.items[0]).toMatchObject({ version: res.body.version, by: operator.userId, reason: 'Security review', action: 'updated', value_before: 10, value_after: 12 });
    const events = await t.ctx.db('audit_events').where({ action: 'ops.setting.updated', target_id: 'auth.password_min_length' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actor_kind: 'operator', actor_id: operator.userId, target_kind: 'setting', data: { key: 'auth.password_min_length', version: res.body.version, value_before: 10, value_after: 12, reason: 'Security review' } });
    await resetToDefault('auth.password_min_length');
  });

  it('answers 409 version_conflict on a stale version and changes nothing', async () => {
    const current = await change('rate_limit.email_per_15_minutes', 4);
    const stale = await put('rate_limit.email_per_15_minutes', { value: 5, version: current.version - 1, reason: 'stale' }).expect(409);
    expect(stale.body).toMatchObject({ code: 'version_conflict', detail: expect.stringContaining(`version ${current.version}`) });
    await reset('rate_limit.email_per_15_minutes', { version: current.version + 7, reason: 'stale' }).expect(409);
    expect((await get('rate_limit.email_per_15_minutes').expect(200)).body).toMatchObject({ value: 4, version: current.version });
    await resetToDefault('rate_limit.email_per_15_minutes');
  });

  it('of two concurrent changes from the same version, exactly one wins', async () => {
    const { body } = await get('rate_limit.step_up_per_15_minutes').expect(200);
    const results = await Promise.all([6, 7, 8].map((value) => t.http.put('/ops/settings/rate_limit.step_up_per_15_minutes').set('Authorization', operator.auth).send({ value, version: body.version, reason: 'race' })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409]);
    await resetToDefault('rate_limit.step_up_per_15_minutes');
  });

  it('resets to the default (history `reset`, audit `ops.setting.reset`); resetting without an override changes nothing', async () => {
    const changed = await change('retention.sent_mail', '48h');
    expect(changed.value).toBe('48h0m0s'); // canonical form
    const res = await reset('retention.sent_mail', { version: changed.version, reason: 'back to default' }).expect(200);
    expect(res.body).toMatchObject({ value: '720h0m0s', modified: false, source: 'code', version: changed.version + 1 });
    const again = await reset('retention.sent_mail', { version: res.body.version, reason: 'again' }).expect(200);
    expect(again.body.version).toBe(res.body.version);
    const history = await t.http.get('/ops/settings/retention.sent_mail/history').set('Authorization', operator.auth).expect(200);
    expect(history.body.items.map((h: any) => [h.action, h.value_before, h.value_after])).toEqual([
      ['reset', '48h0m0s', '720h0m0s'],
      ['updated', '720h0m0s', '48h0m0s'],
    ]);
    expect(await t.ctx.db('audit_events').where({ action: 'ops.setting.reset', target_id: 'retention.sent_mail' })).toHaveLength(1);
  });

  it('pages the history newest first', async () => {
    for (const value of [11, 12, 13]) await change('rate_limit.code_failures_per_day', value);
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/ops/settings/rate_limit.code_failures_per_day/history?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await t.http.get(url).set('Authorization', operator.auth).expect(200);
      seen.push(...res.body.items.map((h: any) => h.version));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([4, 3, 2]);
    await t.http.get('/ops/settings/rate_limit.code_failures_per_day/history?cursor=nope').set('Authorization', operator.auth).expect(422);
    await t.http.get('/ops/settings/no.such/history').set('Authorization', operator.auth).expect(404);
    await resetToDefault('rate_limit.code_failures_per_day');
  });
});

describe('a change reaches every instance', () => {
  it('within a second, through Redis pub/sub', async () => {
    const peer = await startPeer(t);
    try {
      expect(peer.ctx.runtimeSettings.get('rate_limit.login_per_minute')).toBe(10);
      const started = Date.now();
      await change('rate_limit.login_per_minute', 77);
      await waitFor('the peer to apply the change', async () => peer.ctx.runtimeSettings.get('rate_limit.login_per_minute') === 77, 1_000);
      expect(Date.now() - started).toBeLessThan(1_000 + 500); // the PUT itself included
    } finally {
      await peer.close();
      await resetToDefault('rate_limit.login_per_minute');
    }
  });

  it('without Redis, through the periodic reload', async () => {
    const deadRedis = createRedis(loadConfig({ REDIS_URL: `redis://127.0.0.1:${await freePort()}`, REDIS_CONNECT_TIMEOUT_MS: '200', REDIS_COMMAND_TIMEOUT_MS: '200' }).redis);
    const isolated = new RuntimeSettings({ defaults: t.ctx.config.settingDefaults.values, db: () => t.ctx.db, redis: deadRedis, channel: 'unused', logger: t.ctx.logger, reloadMs: 100 });
    await isolated.start();
    try {
      await change('rate_limit.register_per_minute', 999);
      await waitFor('the periodic reload to apply the change', async () => isolated.get('rate_limit.register_per_minute') === 999, 2_000);
    } finally {
      isolated.stop();
      deadRedis.disconnect();
      await resetToDefault('rate_limit.register_per_minute');
    }
  });
});

describe('the settings drive behaviour', () => {
  const register = (email: string, password: string) => t.http.post('/v1/auth/register').send({ email, password, transport: 'bearer' });

  it('auth.password_min_length and auth.registration_enabled apply to the next registration', async () => {
    await register('short-pw@example.com', 'correct horse 1').expect(201); // 15 characters
    await change('auth.password_min_length', 16);
    const short = await register('short-pw2@example.com', 'correct horse 2').expect(422);
    expect(short.body.errors).toEqual([{ location: 'body.password', message: 'must NOT have fewer than 16 characters' }]);
    await resetToDefault('auth.password_min_length');

    await change('auth.registration_enabled', false);
    expect((await register('closed@example.com', 'correct horse battery').expect(403)).body.code).toBe('registration_closed');
    await resetToDefault('auth.registration_enabled');
    await register('open@example.com', 'correct horse battery').expect(201);
  });

  it('maintenance_mode: /v1 writes answer 503 unavailable, reads and /ops keep working', async () => {
    const user = await signedInUser(t.ctx, { verified: true });
    await change('maintenance_mode', true, 'INC-1');
    try {
      const write = await t.http.post('/v1/orgs').set('Authorization', user.auth).send({ name: 'Acme' }).expect(503);
      expect(write.body).toMatchObject({ code: 'unavailable', detail: expect.stringContaining('maintenance') });
      expect(write.headers['retry-after']).toBe('60');
      await t.http.post('/v1/auth/login').send({ email: user.email, password: 'whatever-password' }).expect(503);
      await t.http.get('/v1/auth/me').set('Authorization', user.auth).expect(200);
      await t.http.get('/ops/settings').set('Authorization', operator.auth).expect(200);
    } finally {
      await resetToDefault('maintenance_mode');
    }
    await t.http.post('/v1/orgs').set('Authorization', user.auth).send({ name: 'Acme' }).expect(201);
  });

  it('rate_limit.login_per_minute applies to the next attempt', async () => {
    await change('rate_limit.login_per_minute', 1);
    try {
      const attempt = () => t.http.post('/v1/auth/login').send({ email: 'nobody-limit@example.com', password: 'wrong password here' });
      await attempt().expect(401);
      const limited = await attempt().expect(429);
      expect(limited.body.code).toBe('rate_limited');
    } finally {
      await resetToDefault('rate_limit.login_per_minute');
    }
  });

  it('auth.session_idle_timeout applies at once to existing sessions', async () => {
    const user = await signedInUser(t.ctx);
    await change('auth.session_idle_timeout', '1h');
    try {
      t.clock.advance(2 * 3600 * 1000);
      await t.http.get('/v1/auth/me').set('Authorization', user.auth).expect(401);
      await t.http.get('/ops/settings').set('Authorization', operator.auth).expect(401); // the operator's session too
    } finally {
      t.clock.advance(-2 * 3600 * 1000);
      await resetToDefault('auth.session_idle_timeout');
    }
  });
});
