import { spawn, type ChildProcess } from 'node:child_process';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { bullJobId } from '../../src/jobs/system';
import { projectRoot } from '../../src/config';
import { jobKinds } from '../../src/app-context-factory';
import { waitFor } from '../support/wait';

let t: TestApp;
let auth: string;
beforeAll(async () => {
  t = await startTestApp();
  auth = (await signedInUser(t.ctx, { operator: true })).auth;
});
afterAll(() => t.close());


const system = { actor: { kind: 'system' as const, id: null } };
/** A test email through the mail domain (queued and handed over). */
const enqueueMail = async () => (await t.ctx.services.mail.queue('a@example.com', { template: 'test', params: { requestedBy: null, at: t.clock.now.toISOString() } }, system)).id;
const stateOf = async (id: number) => (await t.http.get(`/ops/jobs/runs/${id}`).set('Authorization', auth).expect(200)).body.state;

it('lists the queues with their waiting counts and concurrency', async () => {
  const id = await enqueueMail();
  const res = await t.http.get('/ops/queues').set('Authorization', auth).expect(200);
  expect(res.body.items.map((q: { name: string }) => q.name)).toEqual(['default', 'mail', 'maintenance']);
  const mail = res.body.items.find((q: { name: string }) => q.name === 'mail');
  expect(mail).toMatchObject({ paused: false, concurrency: 5 });
  expect(mail.counts.available).toBeGreaterThanOrEqual(1);
  await t.ctx.db('job_runs').where({ id }).update({ state: 'cancelled', finalized_at: new Date() });
});

it('pause and resume are audited once, idempotent, and 404 for unknown queues', async () => {
  const paused = await t.http.post('/ops/queues/maintenance/pause').set('Authorization', auth).expect(200);
  expect(paused.body).toMatchObject({ name: 'maintenance', paused: true });
  await t.http.post('/ops/queues/maintenance/pause').set('Authorization', auth).expect(200);
  expect(await t.ctx.jobs.queues.get('maintenance')!.isPaused()).toBe(true);
  const resumed = await t.http.post('/ops/queues/maintenance/resume').set('Authorization', auth).expect(200);
  expect(resumed.body.paused).toBe(false);
  expect(await t.ctx.jobs.queues.get('maintenance')!.isPaused()).toBe(false);
  const events = await t.ctx.db('audit_events').where('target_id', 'maintenance').orderBy('at').select('action');
  expect(events.map((e) => e.action)).toEqual(['ops.queue.paused', 'ops.queue.resumed']);
  await t.http.post('/ops/queues/nope/pause').set('Authorization', auth).expect(404);
});

it('summarises job work in the overview', async () => {
  const id = await enqueueMail();
  await t.ctx.db('job_runs').where({ id }).update({
    state: 'discarded',
    attempt: 1,
    attempted_at: t.clock.now,
    finalized_at: t.clock.now,
    errors: JSON.stringify([{ at: t.clock.now.toISOString(), attempt: 1, message: 'boom' }]),
  });
  const res = await t.http.get('/ops/jobs/overview').set('Authorization', auth).expect(200);
  expect(res.body.by_state.discarded).toBeGreaterThanOrEqual(1);
  expect(res.body.by_kind.find((k: { kind: string }) => k.kind === 'service.mail.send').counts.discarded).toBeGreaterThanOrEqual(1);
  expect(res.body.failures_last_24h).toBeGreaterThanOrEqual(1);
  expect(res.body.queues).toHaveLength(3);
});

it('lists every kind defined in code in the overview, sorted by name, those without runs with zero counts', async () => {
  const res = await t.http.get('/ops/jobs/overview').set('Authorization', auth).expect(200);
  expect(res.body.by_kind.map((k: { kind: string }) => k.kind)).toEqual(jobKinds.map((k) => k.name).sort());
  // No retention run was ever made in this file's database.
  const zero = { scheduled: 0, available: 0, running: 0, retryable: 0, completed: 0, cancelled: 0, discarded: 0 };
  expect(res.body.by_kind.find((k: { kind: string }) => k.kind === 'service.retention.enforce')).toEqual({ kind: 'service.retention.enforce', counts: zero });
});

describe('with a worker in a second process', () => {
  let worker: ChildProcess | undefined;
  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      worker.kill('SIGTERM');
      await new Promise((r) => worker!.once('exit', r));
    }
  });

  it('a pause stops that process taking work from the queue until it is resumed', async () => {
    let output = '';
    // One node process with tsx as a loader (the `tsx` command would relay SIGTERM to a child).
    worker = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'worker'], {
      cwd: projectRoot,
      env: { ...process.env, NODE_ENV: 'development', DATABASE_URL: t.ctx.config.databaseUrl!, REDIS_PREFIX: t.ctx.config.redisPrefix, LOG_LEVEL: 'info', SMTP_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    worker.stdout!.on('data', (d) => (output += d));
    worker.stderr!.on('data', (d) => (output += d));
    await waitFor('the worker process to start', async () => output.includes('job workers started'), 20_000);

    const before = await enqueueMail();
    await waitFor('the worker process to run a mail job', async () => (await stateOf(before)) === 'completed').catch((err) => {
      throw new Error(`${err.message}\n${output}`);
    });

    await t.http.post('/ops/queues/mail/pause').set('Authorization', auth).expect(200);
    const held = await enqueueMail();
    // A run on another queue, handed over after the held one, completes in that process (this
    // test's own instance runs no workers): the process is taking work, but not from the paused queue.
    const later = await t.ctx.jobs.enqueue(t.ctx.db, 'service.retention.enforce', {}, system);
    await t.ctx.jobs.handOver([later]);
    await waitFor('the worker process to run a maintenance job', async () => (await stateOf(later.id)) === 'completed');
    expect(await stateOf(held)).toBe('available');
    expect(await (await t.ctx.jobs.queues.get('mail')!.getJob(bullJobId(held)))?.getState()).not.toBe('active');

    await t.http.post('/ops/queues/mail/resume').set('Authorization', auth).expect(200);
    await waitFor('the held run to complete after resume', async () => (await stateOf(held)) === 'completed');
  }, 45_000);
});
