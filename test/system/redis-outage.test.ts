// A Redis of the test's own, frozen with SIGSTOP (connections open, nothing answers), then killed
// and started again empty (no persistence): requests that need Redis answer 503 within the bound
// (they hung 30 s and more without a command timeout); mail queued meanwhile is delivered once it
// is back; a Redis that lost its data gets the queue pause flags and job schedulers back from
// PostgreSQL without a restart.
import { capturingLogger, linesWith } from '../support/logs';
import { expectUnavailableWithin, timed } from '../support/outages';
import { PrivateRedis } from '../support/private-servers';
import { TestSmtpServer } from '../support/smtp';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { waitFor } from '../support/wait';

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
