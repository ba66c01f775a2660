// A Redis of the test's own, frozen with SIGSTOP (connections open, nothing answers), then killed
// and started again empty (no persistence): requests that need Redis answer 503 within the bound
// (they hung 30 s and more without a command timeout); mail queued meanwhile is delivered once it
// is back, and so is a run an operator retried meanwhile (once); a Redis that lost its data gets
// the queue pause flags and job schedulers back from PostgreSQL without a restart.
import { capturingLogger, linesWith } from '../support/logs';
import { expectUnavailableWithin, timed } from '../support/outages';
import { PrivateRedis } from '../support/private-servers';
import { TestSmtpServer } from '../support/smtp';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { waitFor } from '../support/wait';
import { bullJobId } from '../../src/jobs/system';

const PASSWORD = 'correct horse battery staple';
const BOUND_MS = 300;
const SCHEDULER = 'schedule:service.retention.enforce';

let redis: PrivateRedis;
let smtp: TestSmtpServer;
let t: TestApp;
const logs: string[] = [];
let email: string;
let auth: string;

beforeAll(async () => {
  [redis, smtp] = await Promise.all([PrivateRedis.start(), TestSmtpServer.start()]);
  t = await startTestApp(
    {
      LOG_LEVEL: 'debug',
      BCRYPT_COST: '4',
      SMTP_URL: smtp.url,
      REDIS_URL: redis.url,
      REDIS_CONNECT_TIMEOUT_MS: String(BOUND_MS),
      REDIS_COMMAND_TIMEOUT_MS: String(BOUND_MS),
    },
    { workers: true, logger: capturingLogger(logs), jobTiming: { sweepIntervalMs: 200, handOverGraceMs: 100, backoffMs: 50 } },
  );
  email = `redis-outage-${Date.now()}@example.com`;
  const res = await t.http.post('/v1/auth/register').send({ email, password: PASSWORD, transport: 'bearer' }).expect(201);
  auth = `Bearer ${res.body.token}`;
}, 60_000);

afterAll(async () => {
  redis.resume();
  await t?.close();
  await Promise.all([redis?.kill(), smtp?.stop()]);
});

/** The operations that count attempts in Redis before anything else. */
const needRedis = () => [
  timed(() => t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' })),
  timed(() => t.http.post('/v1/auth/register').send({ email: `new-${Date.now()}@example.com`, password: PASSWORD, transport: 'bearer' })),
  timed(() => t.http.post('/v1/auth/password/forgot').send({ email })),
];

/** Queues a mail the way a request does (in a transaction, handed to BullMQ after the commit). */
async function queueMail(to: string): Promise<number> {
  const start = Date.now();
  await t.ctx.services.transaction((tx) =>
    tx.mail.queue(to, { template: 'passwordChanged', params: { at: new Date().toISOString() } }, { actor: { kind: 'system', id: null } }),
  );
  return Date.now() - start;
}

const delivered = (to: string) => waitFor(`the mail to ${to}`, async () => smtp.messages.find((m) => m.to.includes(to)), 20_000);

it('frozen (SIGSTOP): 503 within the bound; mail queued meanwhile is delivered once it is back; logged once each way', async () => {
  await t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' }).expect(200);
  logs.length = 0;
  const recipient = `frozen-${Date.now()}@example.com`;
  redis.pause();
  try {
    expectUnavailableWithin(BOUND_MS, await Promise.all(needRedis()));
    // What does not need Redis goes on.
    await t.http.get('/v1/auth/me').set('Authorization', auth).expect(200);
    // The hand-over after the commit gives up within the bound; the run waits in the outbox.
    expect(await queueMail(recipient)).toBeLessThan(BOUND_MS + 2_500);
    expectUnavailableWithin(BOUND_MS, await Promise.all(needRedis()));
  } finally {
    redis.resume();
  }
  await waitFor('sign-in to work again', async () => (await t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' })).status === 200);
  t.clock.advance(1_000); // past the sweeper's grace, by the app's clock
  await delivered(recipient);

  expect(linesWith(logs, 'dependency down: requests that need it answer 503 until it is back').map((l) => l.dependency)).toEqual(['redis']);
  await waitFor('the outage to be logged as over', async () => linesWith(logs, 'dependency back').length > 0);
  const back = linesWith(logs, 'dependency back');
  expect(back).toHaveLength(1);
  expect(back[0]).toMatchObject({ dependency: 'redis' });
  expect(back[0]!.refused_requests).toBeGreaterThanOrEqual(6);
  expect(linesWith(logs, 'request failed')).toEqual([]);
}, 60_000);

it('killed and started again empty: pause flags and schedulers come back from PostgreSQL, queued mail is delivered', async () => {
  const operator = await signedInUser(t.ctx, { operator: true });
  await t.http.post('/ops/queues/default/pause').set('Authorization', operator.auth).expect(200);
  const defaultQueue = t.ctx.jobs.queues.get('default')!;
  const maintenance = t.ctx.jobs.queues.get('maintenance')!;
  expect(await defaultQueue.isPaused()).toBe(true);
  expect(await maintenance.getJobScheduler(SCHEDULER)).toBeDefined();

  await redis.kill();
  const recipient = `killed-${Date.now()}@example.com`;
  try {
    expectUnavailableWithin(BOUND_MS, await Promise.all(needRedis()));
    expect(await queueMail(recipient)).toBeLessThan(BOUND_MS + 2_500);
  } finally {
    await redis.start(); // empty: no pause flag, no scheduler, no jobs
  }

  await waitFor('the pause flag back in redis', async () => defaultQueue.isPaused().catch(() => false), 20_000);
  await waitFor('the retention scheduler back in redis', async () => maintenance.getJobScheduler(SCHEDULER).catch(() => undefined), 20_000);
  expect(linesWith(logs, 'queue pauses and job schedules re-applied to redis').length).toBeGreaterThanOrEqual(1);
  // The sweeper hands over runs older than its grace by the app's clock, which tests move by hand.
  t.clock.advance(1_000);
  await delivered(recipient);
  await t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' }).expect(200);
}, 60_000);

// ----- operator retries accepted while Redis is down ---------------------------------------------

const mailJob = (id: number) => t.ctx.jobs.queues.get('mail')!.getJob(bullJobId(id));
const copiesTo = (to: string) => smtp.messages.filter((m) => m.to.includes(to)).length;

/** A mail run an hour from now, handed over and marked so by the sweeper: BullMQ holds it as a delayed job. */
async function scheduledMail(to: string): Promise<number> {
  const payload = { to, template: 'passwordChanged', params: { at: new Date().toISOString() } };
  const run = await t.ctx.jobs.enqueue(t.ctx.db, 'service.mail.send', payload, { actor: { kind: 'system', id: null } }, { delayMs: 3_600_000 });
  expect(await t.ctx.jobs.handOver([run])).toEqual([run.id]);
  t.clock.advance(1_000); // past the sweeper's grace
  await t.ctx.jobs.sweep();
  expect(await t.ctx.db('job_runs').where({ id: run.id }).first('handed_over_at')).toEqual({ handed_over_at: expect.any(Date) });
  expect(await (await mailJob(run.id))?.isDelayed()).toBe(true);
  return run.id;
}

/** POST /ops/jobs/runs/{id}/retry while Redis is down: recorded in PostgreSQL, answered within the bound. */
async function retryDuringOutage(id: number, operatorAuth: string): Promise<void> {
  const answer = await timed(() => t.http.post(`/ops/jobs/runs/${id}/retry`).set('Authorization', operatorAuth));
  expect({ status: answer.status, state: answer.body.state }).toEqual({ status: 200, state: 'available' });
  expect(answer.ms).toBeLessThan(BOUND_MS + 2_500);
}

/** The run completed with its mail sent `copies` times, and nothing left that could send it again. */
async function ranOnce(id: number, to: string, copies: number, operatorAuth: string): Promise<void> {
  await waitFor(`mail ${copies} of run ${id} to ${to}`, async () => copiesTo(to) >= copies, 20_000);
  const runOf = async () => (await t.http.get(`/ops/jobs/runs/${id}`).set('Authorization', operatorAuth).expect(200)).body;
  await waitFor(`run ${id} completed`, async () => (await runOf()).state === 'completed');
  await waitFor(`BullMQ to drop run ${id}`, async () => !(await mailJob(id)));
  await t.ctx.jobs.sweep(); // a sweep after the outage hands nothing over twice
  await waitFor(`BullMQ to drop run ${id}`, async () => !(await mailJob(id)));
  expect(copiesTo(to)).toBe(copies);
  expect(await runOf()).toMatchObject({ state: 'completed', attempt: copies });
}

it('killed and started empty: runs an operator retried meanwhile (a completed mail, a scheduled one) run once when it is back', async () => {
  const operator = await signedInUser(t.ctx, { operator: true });
  const completedTo = `retried-completed-${Date.now()}@example.com`;
  const sent = await t.http.post('/ops/mail/test').set('Authorization', operator.auth).send({ to: completedTo }).expect(202);
  const completed: number = sent.body.job_run_id;
  await ranOnce(completed, completedTo, 1, operator.auth);
  const scheduledTo = `retried-scheduled-${Date.now()}@example.com`;
  const scheduled = await scheduledMail(scheduledTo);

  await redis.kill();
  try {
    await retryDuringOutage(completed, operator.auth);
    await retryDuringOutage(scheduled, operator.auth);
  } finally {
    await redis.start(); // empty: BullMQ holds neither run
  }
  t.clock.advance(1_000); // past the sweeper's grace, by the app's clock
  await ranOnce(completed, completedTo, 2, operator.auth);
  await ranOnce(scheduled, scheduledTo, 1, operator.auth);
}, 60_000);

it('frozen: a scheduled run an operator retried meanwhile runs now once it is back, not at its old time', async () => {
  const operator = await signedInUser(t.ctx, { operator: true });
  const to = `retried-frozen-${Date.now()}@example.com`;
  const scheduled = await scheduledMail(to);
  redis.pause();
  try {
    await retryDuringOutage(scheduled, operator.auth);
  } finally {
    redis.resume(); // with its data: BullMQ still holds the job for an hour from now
  }
  await ranOnce(scheduled, to, 1, operator.auth);
}, 60_000);
