// Job definitions: effective config over code defaults, PUT/DELETE with optimistic concurrency,
// history and audit in the same transaction, overrides invalidated by a deploy, manual runs, the
// schedule list, and the BullMQ job schedulers that follow every change.
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { JobSystem } from '../../src/jobs/system';
import { JobRegistry } from '../../src/jobs/kinds';
import { jobKinds } from '../../src/app-context-factory';
import type { AppContext } from '../../src/app-context';
import { waitFor as waitUntil } from '../support/wait';

const waitFor = <T>(probe: () => Promise<T | null | undefined | false>, timeoutMs = 10_000, what = 'condition') => waitUntil(what, probe, timeoutMs);

const RETENTION = 'service.retention.enforce';
const MAIL = 'service.mail.send';
const SCHEDULER = `schedule:${RETENTION}`;
const RETENTION_DEFAULTS = { enabled: true, max_attempts: 3, priority: 0, queue: 'maintenance', schedule: '0 3 * * *', timeout: '30m0s' };
const MAIL_DEFAULTS = { enabled: true, max_attempts: 5, priority: 0, queue: 'mail', schedule: null, timeout: '1m0s' };
/** A fixed clock in the past: next_run_at is predictable and BullMQ delays stay zero. */
const NOW = new Date('2025-06-01T10:00:00.000Z');

/** Polls `fn` until it returns a truthy value; fails after `timeoutMs`. */

let t: TestApp;
let op: Awaited<ReturnType<typeof signedInUser>>;

beforeAll(async () => {
  t = await startTestApp({}, { workers: true });
  t.clock.now = NOW;
  op = await signedInUser(t.ctx, { operator: true });
});
afterAll(() => t?.close());

const get = (name: string) => t.http.get(`/ops/jobs/definitions/${name}`).set('Authorization', op.auth);
const put = (name: string, body: unknown) => t.http.put(`/ops/jobs/definitions/${name}`).set('Authorization', op.auth).send(body as object);
const del = (name: string, body: unknown) => t.http.delete(`/ops/jobs/definitions/${name}`).set('Authorization', op.auth).send(body as object);
const history = (name: string, qs = '') => t.http.get(`/ops/jobs/definitions/${name}/history${qs}`).set('Authorization', op.auth);
const versionOf = async (name: string): Promise<number> => (await get(name).expect(200)).body.version;
const historyRows = (name: string) => t.ctx.db('job_definition_history').where({ name }).orderBy('version', 'desc');
const auditRows = (action: string) => t.ctx.db('audit_events').where({ action }).orderBy('at', 'desc');
const schedulerOn = (queue: string) => t.ctx.jobs.queues.get(queue)!.getJobScheduler(SCHEDULER);

/** Every test starts from the code defaults. */
async function resetRetention(): Promise<void> {
  await del(RETENTION, { version: await versionOf(RETENTION), reason: 'test reset' }).expect(200);
}

describe('reading definitions', () => {
  it('lists every kind of the catalogue, sorted by name, with defaults and no override', async () => {
    const res = await t.http.get('/ops/jobs/definitions').set('Authorization', op.auth).expect(200);
    expect(res.body.next_cursor).toBeNull();
    const names = res.body.items.map((d: any) => d.name);
    expect(names).toEqual(jobKinds.map((k) => k.name).sort());
    expect(names).toEqual(expect.arrayContaining([MAIL, RETENTION]));
    const mail = res.body.items.find((d: any) => d.name === MAIL);
    const retention = res.body.items.find((d: any) => d.name === RETENTION);
    expect(retention).toEqual({
      name: RETENTION,
      description: expect.any(String),
      config: RETENTION_DEFAULTS,
      defaults: RETENTION_DEFAULTS,
      modified: false,
      invalid_override: false,
      version: 1,
      last_run: null,
      next_run_at: '2025-06-02T03:00:00.000Z',
      updated_at: null,
      updated_by: null,
    });
    expect(mail).toMatchObject({ name: MAIL, config: MAIL_DEFAULTS, defaults: MAIL_DEFAULTS, version: 1, next_run_at: null, modified: false });
  });

  it('gets one definition; an unknown name is 404, a non-operator 403', async () => {
    expect((await get(RETENTION).expect(200)).body).toMatchObject({ name: RETENTION, config: RETENTION_DEFAULTS, version: 1 });
    expect((await get('no.such.kind').expect(404)).body.code).toBe('not_found');
    expect((await history('no.such.kind').expect(404)).body.code).toBe('not_found');
    const user = await signedInUser(t.ctx);
    await t.http.get(`/ops/jobs/definitions/${RETENTION}`).set('Authorization', user.auth).expect(403);
  });
});

describe('schedules in BullMQ', () => {
  it('registers the default schedule on the maintenance queue at start', async () => {
    const scheduler = await schedulerOn('maintenance');
    expect(scheduler).toMatchObject({ key: SCHEDULER, pattern: '0 3 * * *', tz: 'UTC' });
    expect(await t.ctx.jobs.queues.get('maintenance')!.getJobSchedulersCount()).toBe(1);
    expect(await schedulerOn('default')).toBeUndefined();
  });

  it('follows PUTs: a new pattern, a new queue, removal when disabled, back on reset', async () => {
    const v = await versionOf(RETENTION);
    await put(RETENTION, { config: { schedule: '*/5 * * * *' }, version: v, reason: 'every five minutes' }).expect(200);
    expect(await schedulerOn('maintenance')).toMatchObject({ pattern: '*/5 * * * *' });

    await put(RETENTION, { config: { queue: 'default' }, version: v + 1, reason: 'move queue' }).expect(200);
    expect(await schedulerOn('maintenance')).toBeUndefined();
    expect(await schedulerOn('default')).toMatchObject({ pattern: '*/5 * * * *' });

    const disabled = await put(RETENTION, { config: { enabled: false }, version: v + 2, reason: 'stop it' }).expect(200);
    expect(disabled.body.next_run_at).toBeNull();
    for (const q of ['default', 'mail', 'maintenance']) expect(await schedulerOn(q)).toBeUndefined();

    await del(RETENTION, { version: v + 3, reason: 'back to defaults' }).expect(200);
    expect(await schedulerOn('maintenance')).toMatchObject({ pattern: '0 3 * * *' });
    expect(await schedulerOn('default')).toBeUndefined();
  });

  it('two job systems on the same prefix applying schedules together leave exactly one scheduler', async () => {
    const make = () =>
      new JobSystem<AppContext>({
        db: t.ctx.db,
        redis: t.ctx.config.redis,
        dependencies: t.ctx.dependencies,
        metrics: t.ctx.metrics,
        prefix: `${t.ctx.config.redisPrefix}bull`,
        registry: new JobRegistry(jobKinds),
        app: () => t.ctx,
        logger: t.ctx.logger,
        now: t.ctx.now,
        concurrency: t.ctx.config.jobConcurrency,
      });
    const others = [make(), make()];
    try {
      await Promise.all([...others.map((s) => s.applySchedules()), t.ctx.jobs.applySchedules()]);
      expect(await t.ctx.jobs.queues.get('maintenance')!.getJobSchedulersCount()).toBe(1);
      expect(await t.ctx.jobs.queues.get('default')!.getJobSchedulersCount()).toBe(0);
      expect(await t.ctx.jobs.queues.get('mail')!.getJobSchedulersCount()).toBe(0);
      expect(await schedulerOn('maintenance')).toMatchObject({ pattern: '0 3 * * *' });
    } finally {
      await Promise.all(others.map((s) => s.stop()));
    }
  });
});

describe('PUT /ops/jobs/definitions/{name}', () => {
  beforeEach(resetRetention);

  it('changes the effective config, bumps the version, writes history and audit', async () => {
    const v = await versionOf(RETENTION);
    const historyBefore = (await historyRows(RETENTION)).length;
    const res = await put(RETENTION, { config: { schedule: '*/5 * * * *', timeout: '90m' }, version: v, reason: 'run often' }).expect(200);
    const after = { ...RETENTION_DEFAULTS, schedule: '*/5 * * * *', timeout: '1h30m0s' };
    expect(res.body).toMatchObject({
      config: after,
      defaults: RETENTION_DEFAULTS,
      modified: true,
      invalid_override: false,
      version: v + 1,
      next_run_at: '2025-06-01T10:05:00.000Z',
      updated_at: NOW.toISOString(),
      updated_by: op.userId,
    });
    expect((await get(RETENTION).expect(200)).body).toMatchObject({ config: after, version: v + 1 });
    expect(t.ctx.jobs.configOf(RETENTION)).toEqual(after);

    const [stored] = await t.ctx.db('job_definitions').where({ name: RETENTION });
    expect(stored.override).toEqual({ schedule: '*/5 * * * *', timeout: '1h30m0s' });
    const rows = await historyRows(RETENTION);
    expect(rows).toHaveLength(historyBefore + 1);
    expect(rows[0]).toMatchObject({ version: v + 1, by: op.userId, reason: 'run often', action: 'updated', config_before: RETENTION_DEFAULTS, config_after: after });
    const [audit] = await auditRows('ops.job.updated');
    expect(audit).toMatchObject({
      actor_kind: 'operator',
      actor_id: op.userId,
      target_kind: 'job_definition',
      target_id: RETENTION,
      request_id: res.headers['x-request-id'],
    });
    expect(audit.data).toMatchObject({ version: v + 1, reason: 'run often', config_after: after });
  });

  it('merges a partial config over the stored override', async () => {
    const v = await versionOf(RETENTION);
    await put(RETENTION, { config: { priority: 7 }, version: v, reason: 'a' }).expect(200);
    const res = await put(RETENTION, { config: { max_attempts: 9 }, version: v + 1, reason: 'b' }).expect(200);
    expect(res.body.config).toEqual({ ...RETENTION_DEFAULTS, priority: 7, max_attempts: 9 });
    const [stored] = await t.ctx.db('job_definitions').where({ name: RETENTION });
    expect(stored.override).toEqual({ priority: 7, max_attempts: 9 });
  });

  it('writes nothing when the stored override stays the same', async () => {
    const v = await versionOf(RETENTION);
    await put(RETENTION, { config: { priority: 7 }, version: v, reason: 'a' }).expect(200);
    const historyCount = (await historyRows(RETENTION)).length;
    const auditCount = (await auditRows('ops.job.updated')).length;
    const res = await put(RETENTION, { config: { priority: 7 }, version: v + 1, reason: 'again' }).expect(200);
    expect(res.body.version).toBe(v + 1);
    expect(await historyRows(RETENTION)).toHaveLength(historyCount);
    expect(await auditRows('ops.job.updated')).toHaveLength(auditCount);
  });

  it('answers 409 version_conflict on a stale version and changes nothing', async () => {
    const v = await versionOf(RETENTION);
    await put(RETENTION, { config: { priority: 5 }, version: v, reason: 'first' }).expect(200);
    const historyCount = (await historyRows(RETENTION)).length;
    const res = await put(RETENTION, { config: { priority: 6 }, version: v, reason: 'stale' }).expect(409);
    expect(res.body).toMatchObject({ code: 'version_conflict', detail: `The job definition is at version ${v + 1}; reload it and try again.` });
    expect((await get(RETENTION).expect(200)).body).toMatchObject({ version: v + 1, config: { priority: 5 } });
    expect(await historyRows(RETENTION)).toHaveLength(historyCount);
  });

  it('lets only one of two concurrent PUTs of the same version win', async () => {
    const v = await versionOf(RETENTION);
    const results = await Promise.all([
      put(RETENTION, { config: { priority: 11 }, version: v, reason: 'one' }),
      put(RETENTION, { config: { priority: 12 }, version: v, reason: 'two' }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    const winner = results.find((r) => r.status === 200)!;
    expect((await get(RETENTION).expect(200)).body).toMatchObject({ version: v + 1, config: { priority: winner.body.config.priority } });
    expect((await historyRows(RETENTION)).filter((r: any) => r.version === v + 1)).toHaveLength(1);
  });

  it('lets only one of two concurrent first PUTs win when no row exists yet', async () => {
    // service.mail.send has never been changed in this file: no job_definitions row.
    expect(await t.ctx.db('job_definitions').where({ name: MAIL }).first()).toBeUndefined();
    const results = await Promise.all([
      put(MAIL, { config: { priority: 1 }, version: 1, reason: 'one' }),
      put(MAIL, { config: { priority: 2 }, version: 1, reason: 'two' }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(await historyRows(MAIL)).toHaveLength(1);
    const v = await versionOf(MAIL);
    expect(v).toBe(2);
    await del(MAIL, { version: v, reason: 'cleanup' }).expect(200);
  });

  it('answers 422 invalid_job_config naming each bad field, and changes nothing', async () => {
    const v = await versionOf(RETENTION);
    const cases: [Record<string, unknown>, string[]][] = [
      [{ schedule: '61 * * * *' }, ['body.config.schedule']],
      [{ schedule: '0 0 3 * * *' }, ['body.config.schedule']],
      [{ schedule: '@daily' }, ['body.config.schedule']],
      [{ queue: 'reports' }, ['body.config.queue']],
      [{ timeout: '48h' }, ['body.config.timeout']],
      [{ timeout: '0s' }, ['body.config.timeout']],
      [{ schedule: '61 * * * *', queue: 'gone', timeout: '25h' }, ['body.config.schedule', 'body.config.queue', 'body.config.timeout']],
    ];
    for (const [config, locations] of cases) {
      const res = await put(RETENTION, { config, version: v, reason: 'bad' }).expect(422);
      expect(res.body.code).toBe('invalid_job_config');
      expect(res.body.errors.map((e: any) => e.location).sort()).toEqual([...locations].sort());
    }
    const mail = await put(MAIL, { config: { schedule: '0 3 * * *' }, version: await versionOf(MAIL), reason: 'mail cannot be scheduled' }).expect(422);
    expect(mail.body).toMatchObject({ code: 'invalid_job_config', errors: [{ location: 'body.config.schedule', message: expect.any(String) }] });
    expect((await get(RETENTION).expect(200)).body).toMatchObject({ version: v, config: RETENTION_DEFAULTS });
  });

  it('answers 422 validation_failed for what the schema refuses', async () => {
    const v = await versionOf(RETENTION);
    const zero = await put(RETENTION, { config: { max_attempts: 0 }, version: v, reason: 'bad' }).expect(422);
    expect(zero.body).toMatchObject({ code: 'validation_failed' });
    expect(zero.body.errors.map((e: any) => e.location)).toEqual(['body.config.max_attempts']);
    const duration = await put(RETENTION, { config: { timeout: '5 minutes' }, version: v, reason: 'bad' }).expect(422);
    expect(duration.body.code).toBe('validation_failed');
    expect(duration.body.errors.map((e: any) => e.location)).toEqual(['body.config.timeout']);
    expect(await versionOf(RETENTION)).toBe(v);
  });
});

describe('an override invalidated by a deploy', () => {
  beforeEach(resetRetention);

  it('is ignored, flagged invalid_override, and dropped by the next PUT', async () => {
    const v = await versionOf(RETENTION);
    await t.ctx.db('job_definitions').where({ name: RETENTION }).update({ override: JSON.stringify({ queue: 'gone', priority: 4 }) });
    await t.ctx.jobs.reloadConfigs();

    const res = await get(RETENTION).expect(200);
    expect(res.body).toMatchObject({ invalid_override: true, modified: false, config: RETENTION_DEFAULTS, version: v });
    expect(t.ctx.jobs.configOf(RETENTION)).toEqual(RETENTION_DEFAULTS);

    // A PUT keeps the valid stored fields and drops the invalid ones.
    const updated = await put(RETENTION, { config: { max_attempts: 4 }, version: v, reason: 'repair' }).expect(200);
    expect(updated.body).toMatchObject({ invalid_override: false, modified: true, config: { ...RETENTION_DEFAULTS, priority: 4, max_attempts: 4 } });
    const [stored] = await t.ctx.db('job_definitions').where({ name: RETENTION });
    expect(stored.override).toEqual({ priority: 4, max_attempts: 4 });
    const [entry] = await historyRows(RETENTION);
    expect(entry.config_before).toEqual(RETENTION_DEFAULTS);
  });

  it('is cleared by DELETE', async () => {
    const v = await versionOf(RETENTION);
    await t.ctx.db('job_definitions').where({ name: RETENTION }).update({ override: JSON.stringify({ queue: 'gone' }) });
    await t.ctx.jobs.reloadConfigs();
    const res = await del(RETENTION, { version: v, reason: 'clear the broken override' }).expect(200);
    expect(res.body).toMatchObject({ invalid_override: false, modified: false, version: v + 1 });
  });
});

describe('DELETE /ops/jobs/definitions/{name} and history', () => {
  beforeEach(resetRetention);

  it('resets to the defaults with history and audit; without an override it writes nothing', async () => {
    const v = await versionOf(RETENTION);
    await put(RETENTION, { config: { schedule: '30 2 * * *', priority: 3 }, version: v, reason: 'earlier' }).expect(200);
    await del(RETENTION, { version: v, reason: 'stale' }).expect(409);

    const res = await del(RETENTION, { version: v + 1, reason: 'back to defaults' }).expect(200);
    expect(res.body).toMatchObject({
      config: RETENTION_DEFAULTS,
      modified: false,
      invalid_override: false,
      version: v + 2,
      next_run_at: '2025-06-02T03:00:00.000Z',
      updated_by: op.userId,
    });
    const [stored] = await t.ctx.db('job_definitions').where({ name: RETENTION });
    expect(stored.override).toBeNull();
    const [entry] = await historyRows(RETENTION);
    expect(entry).toMatchObject({
      version: v + 2,
      action: 'reset',
      reason: 'back to defaults',
      config_before: { ...RETENTION_DEFAULTS, schedule: '30 2 * * *', priority: 3 },
      config_after: RETENTION_DEFAULTS,
    });
    const [audit] = await auditRows('ops.job.reset');
    expect(audit).toMatchObject({ actor_id: op.userId, target_kind: 'job_definition', target_id: RETENTION, request_id: res.headers['x-request-id'] });
    expect(await schedulerOn('maintenance')).toMatchObject({ pattern: '0 3 * * *' });

    // Nothing stored: 200 as it is, no new version, no history, no audit.
    const resets = (await auditRows('ops.job.reset')).length;
    const again = await del(RETENTION, { version: v + 2, reason: 'again' }).expect(200);
    expect(again.body.version).toBe(v + 2);
    expect((await historyRows(RETENTION))[0].version).toBe(v + 2);
    expect(await auditRows('ops.job.reset')).toHaveLength(resets);
  });

  it('needs a body', async () => {
    const res = await t.http.delete(`/ops/jobs/definitions/${RETENTION}`).set('Authorization', op.auth).expect(422);
    expect(res.body.errors[0].location).toBe('body');
  });

  it('lists changes newest first, with a cursor', async () => {
    const v = await versionOf(RETENTION);
    await put(RETENTION, { config: { priority: 1 }, version: v, reason: 'one' }).expect(200);
    await put(RETENTION, { config: { priority: 2 }, version: v + 1, reason: 'two' }).expect(200);
    await del(RETENTION, { version: v + 2, reason: 'three' }).expect(200);

    const all = await history(RETENTION, '?limit=100').expect(200);
    const versions = all.body.items.map((e: any) => e.version);
    expect(versions).toEqual([...versions].sort((a: number, b: number) => b - a));
    expect(all.body.items.slice(0, 3)).toEqual([
      expect.objectContaining({ version: v + 3, action: 'reset', reason: 'three', by: op.userId, at: NOW.toISOString(), config_after: RETENTION_DEFAULTS }),
      expect.objectContaining({ version: v + 2, action: 'updated', reason: 'two', config_before: { ...RETENTION_DEFAULTS, priority: 1 }, config_after: { ...RETENTION_DEFAULTS, priority: 2 } }),
      expect.objectContaining({ version: v + 1, action: 'updated', reason: 'one', config_before: RETENTION_DEFAULTS }),
    ]);
    expect(all.body.next_cursor).toBeNull();

    const first = await history(RETENTION, '?limit=2').expect(200);
    expect(first.body.items.map((e: any) => e.version)).toEqual([v + 3, v + 2]);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await history(RETENTION, `?limit=2&cursor=${first.body.next_cursor}`).expect(200);
    expect(second.body.items[0].version).toBe(v + 1);
    expect((await history(RETENTION, '?cursor=nonsense').expect(422)).body.errors[0].location).toBe('query.cursor');
  });
});

describe('POST /ops/jobs/definitions/{name}/run', () => {
  beforeEach(resetRetention);

  it('creates a run (202) that the workers complete, with the audit event', async () => {
    const res = await t.http.post(`/ops/jobs/definitions/${RETENTION}/run`).set('Authorization', op.auth).expect(202);
    const requestId = res.headers['x-request-id'];
    expect(res.body).toMatchObject({ kind: RETENTION, queue: 'maintenance', state: 'available', attempt: 0, max_attempts: 3, actor_kind: 'operator', actor_id: op.userId, request_id: requestId });
    const id = res.body.id;
    expect(await t.ctx.db('job_runs').where({ id }).first()).toMatchObject({ kind: RETENTION, actor_kind: 'operator' });
    const [audit] = await auditRows('ops.job.run_requested');
    expect(audit).toMatchObject({ actor_id: op.userId, target_kind: 'job_definition', target_id: RETENTION, request_id: requestId });
    expect(audit.data).toEqual({ job_run_id: id });

    const done = await waitFor(
      async () => {
        const run = await t.http.get(`/ops/jobs/runs/${id}`).set('Authorization', op.auth).expect(200);
        return run.body.state === 'completed' ? run.body : null;
      },
      10_000,
      `run ${id} to complete`,
    );
    expect(done).toMatchObject({ attempt: 1, errors: [], finalized_at: expect.any(String) });
    expect((await get(RETENTION).expect(200)).body.last_run).toMatchObject({ id, state: 'completed' });
  });

  it('uses the effective config of the kind', async () => {
    await put(RETENTION, { config: { priority: 8, max_attempts: 2 }, version: await versionOf(RETENTION), reason: 'x' }).expect(200);
    await t.ctx.jobs.setPaused('maintenance', true);
    try {
      const res = await t.http.post(`/ops/jobs/definitions/${RETENTION}/run`).set('Authorization', op.auth).expect(202);
      expect(res.body).toMatchObject({ priority: 8, max_attempts: 2 });
    } finally {
      await t.ctx.jobs.setPaused('maintenance', false);
    }
  });

  it('answers 422 job_not_runnable for a kind that needs a payload, creating no run', async () => {
    const before = await t.ctx.db('job_runs').where({ kind: MAIL }).count<{ count: string }[]>('* as count');
    const res = await t.http.post(`/ops/jobs/definitions/${MAIL}/run`).set('Authorization', op.auth).expect(422);
    expect(res.body).toMatchObject({ code: 'job_not_runnable', errors: [{ location: 'path.name', message: expect.any(String) }] });
    expect(await t.ctx.db('job_runs').where({ kind: MAIL }).count('* as count')).toEqual(before);
  });

  it('answers 409 job_disabled for a disabled kind, and 404 for an unknown one', async () => {
    await put(RETENTION, { config: { enabled: false }, version: await versionOf(RETENTION), reason: 'off' }).expect(200);
    const count = async () => Number((await t.ctx.db('job_runs').where({ kind: RETENTION }).count<{ count: string }[]>('* as count'))[0]!.count);
    const before = await count();
    expect((await t.http.post(`/ops/jobs/definitions/${RETENTION}/run`).set('Authorization', op.auth).expect(409)).body.code).toBe('job_disabled');
    expect(await count()).toBe(before);
    expect((await t.http.post('/ops/jobs/definitions/no.such.kind/run').set('Authorization', op.auth).expect(404)).body.code).toBe('not_found');
  });
});

describe('GET /ops/jobs/scheduled', () => {
  beforeEach(resetRetention);

  it('lists enabled kinds with a schedule, and leaves out disabled ones', async () => {
    const res = await t.http.get('/ops/jobs/scheduled').set('Authorization', op.auth).expect(200);
    expect(res.body.next_cursor).toBeNull();
    const { last_run } = (await get(RETENTION).expect(200)).body;
    expect(res.body.items).toEqual([{ name: RETENTION, schedule: '0 3 * * *', queue: 'maintenance', next_run_at: '2025-06-02T03:00:00.000Z', last_run }]);
    expect(res.body.items.map((i: any) => i.name)).not.toContain(MAIL);

    const v = await versionOf(RETENTION);
    await put(RETENTION, { config: { schedule: '15 11 * * *', queue: 'default' }, version: v, reason: 'move' }).expect(200);
    const moved = await t.http.get('/ops/jobs/scheduled').set('Authorization', op.auth).expect(200);
    expect(moved.body.items).toEqual([expect.objectContaining({ name: RETENTION, schedule: '15 11 * * *', queue: 'default', next_run_at: '2025-06-01T11:15:00.000Z' })]);

    await put(RETENTION, { config: { enabled: false }, version: v + 1, reason: 'off' }).expect(200);
    expect((await t.http.get('/ops/jobs/scheduled').set('Authorization', op.auth).expect(200)).body.items).toEqual([]);
  });
});
