// Redis as users deploy it (issue 23, item 2): a primary, a replica and three Sentinels, the
// service told only where the Sentinels are. Three instances: a test app with workers (the
// redis+sentinel:// URL form), a second in-process instance, and a real `serve` process
// (REDIS_SENTINELS + REDIS_SENTINEL_NAME). Requests, rate limits, a job and a setting change work
// through Sentinel; then the primary is SIGKILLed, and later frozen, under a load of sign-ins and
// operator test mails: every instance recovers by itself within RECOVERY_BOUND_MS, answers 503
// with Retry-After meanwhile (never a hang, never another 5xx), every mail enqueued is sent once,
// the paused queue stays paused and the schedulers are there on the new primary. Last, a primary
// demoted without the Sentinels announcing it: its READONLY answers become 503s, then the new master.
import { createApp } from '../../src/app';
import { capturingLogger, linesWith } from '../support/logs';
import { killAll, request, type Answer } from '../support/processes';
import { MASTER_NAME, SentinelGroup, type RedisNode } from '../support/sentinel';
import { TestSmtpServer } from '../support/smtp';
import { contractClient, startPeer, startTestApp, type ContractClient, type TestApp } from '../support/test-app';
import { deploymentEnv, startInstance, type Instance } from '../support/topology';
import { signedInUser } from '../support/users';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

// Sentinel's detection in this group (production: see README "Production"). The bound the service
// must recover within counts from the kill: detection, the Sentinels' agreement and promotion, then
// the service's reconnection (at most a second: the reconnect delay's cap).
const DOWN_AFTER_MS = 1_000;
const FAILOVER_TIMEOUT_MS = 5_000;
const RECOVERY_BOUND_MS = 10_000;
// No request may wait longer than a Redis command's bound, plus room for a loaded machine.
const COMMAND_TIMEOUT_MS = 500;
const REQUEST_BOUND_MS = COMMAND_TIMEOUT_MS + 2_500;
const PASSWORD = 'correct horse battery staple';
const SCHEDULER = 'schedule:service.retention.enforce';
const UNLIMITED = '1000000';

let group: SentinelGroup;
let smtp: TestSmtpServer;
let t: TestApp;
let peer: Awaited<ReturnType<typeof startPeer>>;
let peerHttp: ContractClient;
let proc: Instance;
let operator: string;
const logs: string[] = [];
const email = `sentinel-${Date.now()}@example.com`;

beforeAll(async () => {
  [group, smtp] = await Promise.all([SentinelGroup.start({ downAfterMs: DOWN_AFTER_MS, failoverTimeoutMs: FAILOVER_TIMEOUT_MS }), TestSmtpServer.start()]);
  const limits = { RATE_LIMIT_LOGIN_PER_MINUTE: UNLIMITED, RATE_LIMIT_REGISTER_PER_MINUTE: UNLIMITED, RATE_LIMIT_IP_PER_MINUTE: '0' };
  const bounds = { REDIS_CONNECT_TIMEOUT_MS: '1000', REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS) };
  t = await startTestApp(
    { REDIS_URL: group.url, REDIS_SENTINEL_PASSWORD: group.sentinelPassword, ...bounds, ...limits, BCRYPT_COST: '4', SMTP_URL: smtp.url, LOG_LEVEL: 'info' },
    { workers: true, logger: capturingLogger(logs), jobTiming: { sweepIntervalMs: 200, handOverGraceMs: 100, backoffMs: 50, overdueMs: 1_000 } },
  );
  peer = await startPeer(t);
  peerHttp = contractClient(createApp(peer.ctx));
  // The same database and key prefix: a third instance of the same deployment, API only.
  const env = deploymentEnv(t.ctx.config.databaseUrl!, { ...group.env, ...bounds, REDIS_URL: '', REDIS_PREFIX: t.ctx.config.redisPrefix, RUN_WORKERS: 'false', SHUTDOWN_DELAY_MS: '0' });
  proc = await startInstance('serve', env);
  operator = (await signedInUser(t.ctx, { operator: true })).auth;
  await t.http.post('/v1/auth/register').send({ email, password: PASSWORD, transport: 'bearer' }).expect(201);
}, 120_000);

afterAll(async () => {
  await killAll();
  await peer?.close();
  await t?.close();
  await Promise.all([group?.stop(), smtp?.stop()]);
  // ioredis gives each closed Sentinel connection of a failover detector 2 s (its default
  // disconnectTimeout, not configurable there) to say goodbye before it cuts it.
  await new Promise((r) => setTimeout(r, 2_100));
});

// ----- helpers ---------------------------------------------------------------------------------

const signIn = { email, password: PASSWORD, transport: 'bearer' };
const viaProc = (method: string, path: string, body?: unknown, auth?: string) => request(proc.port, method, path, { body, headers: auth ? { Authorization: auth } : {} });

/** Changes a runtime setting on the test app (`undefined`: back to its default). */
async function setting(key: string, value: unknown): Promise<void> {
  const { body } = await t.http.get(`/ops/settings/${key}`).set('Authorization', operator).expect(200);
  if (value === undefined) await t.http.delete(`/ops/settings/${key}`).set('Authorization', operator).send({ version: body.version, reason: 'sentinel test' }).expect(200);
  else await t.http.put(`/ops/settings/${key}`).set('Authorization', operator).send({ value, version: body.version, reason: 'sentinel test' }).expect(200);
}

/** Subscribers of `channel` on `node`: which instances listen there now. */
async function subscribers(node: RedisNode, channel: string): Promise<number> {
  const [, count] = (await node.ask('PUBSUB', 'NUMSUB', channel)) as [string, number];
  return Number(count);
}

/** Every instance's settings and job signals subscribers are on `node` (three instances). */
async function listeningOn(node: RedisNode): Promise<void> {
  const prefix = t.ctx.config.redisPrefix;
  await waitFor(`the three instances to subscribe on ${node.port}`, async () => {
    const counts = await Promise.all([`${prefix}settings`, `${prefix}bull:jobs:cancel`].map((c) => subscribers(node, c).catch(() => 0)));
    return counts.every((n) => n === 3);
  }, 15_000);
}

interface Sample {
  who: string;
  what: string;
  status: number;
  code?: string;
  retryAfter?: string;
  start: number;
  end: number;
  /** Mail recipient of an accepted enqueue. */
  to?: string;
}

type Send = (i: number) => Promise<{ status: number; body: any; headers: Record<string, any> }> | PromiseLike<{ status: number; body: any; headers: Record<string, any> }>;

let round = 0;

/**
 * Sign-ins and operator test mails on the three instances, in loops, until `stop`: each answer
 * with its status and when it came. A request with no answer within processes.ts's 5 s timeout
 * is recorded as status 0 (a hang).
 */
function load(samples: Sample[], stopped: () => boolean): Promise<void> {
  let n = 0;
  const r = ++round;
  const loop = (who: string, what: string, send: Send, to?: (i: number) => string) =>
    (async () => {
      while (!stopped()) {
        const i = n++;
        const start = Date.now();
        const answer = await Promise.resolve(send(i)).catch(() => ({ status: 0, body: {}, headers: {} }) as Answer);
        samples.push({ who, what, status: answer.status, code: answer.body?.code, retryAfter: answer.headers['retry-after'], start, end: Date.now(), to: answer.status === 202 ? to?.(i) : undefined });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
  const mailTo = (i: number) => `failover-${r}-${i}-${email}`;
  return Promise.all([
    loop('app', 'sign-in', () => t.http.post('/v1/auth/login').send(signIn)),
    loop('peer', 'sign-in', () => peerHttp.post('/v1/auth/login').send(signIn)),
    loop('serve', 'sign-in', () => viaProc('POST', '/v1/auth/login', signIn)),
    loop('app', 'mail', (i) => t.http.post('/ops/mail/test').set('Authorization', operator).send({ to: mailTo(i) }), mailTo),
    loop('serve', 'mail', (i) => viaProc('POST', '/ops/mail/test', { to: mailTo(i) }, operator), mailTo),
  ]).then(() => undefined);
}

const OK = new Set([200, 202]);

/**
 * Runs the load, does `fail` one second in, and keeps it up until every instance has answered
 * only successes for two seconds (or the bound has long passed). Answers the samples, when `fail`
 * happened, and each instance's recovery: the end of its last refused answer, from `fail`.
 */
async function failUnderLoad(fail: () => Promise<void> | void) {
  const samples: Sample[] = [];
  let stop = false;
  const running = load(samples, () => stop);
  await new Promise((r) => setTimeout(r, 1_000));
  const failedAt = Date.now();
  await fail();
  const healthySince = (who: string) => {
    const last = samples.filter((s) => s.who === who && s.end > failedAt && !OK.has(s.status)).at(-1);
    return last ? last.end : failedAt;
  };
  await waitFor(
    'every instance to answer only successes for 2 s',
    async () => ['app', 'peer', 'serve'].every((who) => Date.now() - healthySince(who) > 2_000 && Date.now() - failedAt > 3_000),
    RECOVERY_BOUND_MS + 20_000,
  ).catch(() => undefined); // the assertions below say what went wrong
  stop = true;
  await running;
  const recovery = Object.fromEntries(['app', 'peer', 'serve'].map((who) => [who, healthySince(who) - failedAt]));
  return { samples, failedAt, recovery };
}

/** During the switch: successes, or 503 `unavailable` with Retry-After; none slower than the bound. */
function expectOnlySuccessOr503(samples: Sample[]): void {
  const wrong = samples.filter((s) => !OK.has(s.status) && !(s.status === 503 && s.code === 'unavailable' && Number(s.retryAfter) > 0));
  expect(wrong).toEqual([]);
  const slow = samples.filter((s) => s.end - s.start > REQUEST_BOUND_MS);
  expect(slow).toEqual([]);
}

/** Every mail accepted (202) is sent exactly once, and its run is completed. */
async function expectEachMailSentOnce(samples: Sample[]): Promise<void> {
  const recipients = samples.flatMap((s) => (s.to ? [s.to] : []));
  expect(recipients.length).toBeGreaterThan(10);
  await expectSentOnce(recipients);
}

async function expectSentOnce(recipients: string[]): Promise<void> {
  // The sweeper works by the test app's clock: past the hand-over grace and BullMQ's overdue bound
  // for runs the instances wrote by the real clock.
  const copies = (to: string) => smtp.messages.filter((m) => m.to.includes(to)).length;
  await waitFor(
    `the ${recipients.length} mails`,
    async () => {
      t.clock.now = new Date(Math.max(t.clock.now.getTime(), Date.now()) + 2_000);
      return recipients.every((to) => copies(to) >= 1);
    },
    60_000,
  );
  await new Promise((r) => setTimeout(r, 1_000)); // a second copy would have come by now
  expect(recipients.filter((to) => copies(to) !== 1)).toEqual([]);
  const states = await t.ctx.db('job_runs').whereRaw("payload->>'to' = any(?)", [recipients]).select('state');
  expect(states.map((r) => r.state)).toEqual(recipients.map(() => 'completed'));
}

// ----- the tests -------------------------------------------------------------------------------

it('configured only through Sentinel: requests, rate limits, a mail run end to end, a setting reaching every instance', async () => {
  const { body } = await t.http.get('/ops/system').set('Authorization', operator).expect(200);
  expect(body.config).toMatchObject({ redis_url: `redis+sentinel://${group.env.REDIS_SENTINELS}/${MASTER_NAME}`, redis_password: 'set', redis_sentinel_password: 'set' });
  expect(body.redis).toMatchObject({ reachable: true });
  await t.http.post('/v1/auth/login').send(signIn).expect(200);
  await peerHttp.post('/v1/auth/login').send(signIn).expect(200);
  expect((await viaProc('POST', '/v1/auth/login', signIn)).status).toBe(200);
  const primary = await group.primary();
  await listeningOn(primary);

  // A change on one instance reaches the others over pub/sub (the periodic reload takes 10 s),
  // and the registration limit then counts in Redis, on every instance.
  const changed = Date.now();
  await setting('rate_limit.register_per_minute', 2);
  await waitFor('the peer to apply the change', async () => peer.ctx.runtimeSettings.get('rate_limit.register_per_minute') === 2, 2_000);
  const refused = await waitFor(
    'the serve process to refuse a registration (429)',
    async () => {
      const answer = await viaProc('POST', '/v1/auth/register', { email: `limit-${Date.now()}-${Math.random()}@example.com`, password: PASSWORD, transport: 'bearer' });
      return answer.status === 429 ? answer : null;
    },
    2_000,
  );
  expect(Date.now() - changed).toBeLessThan(3_000);
  expect(refused.body.code).toBe('rate_limited');
  expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  await setting('rate_limit.register_per_minute', undefined);

  const sent = await t.http.post('/ops/mail/test').set('Authorization', operator).send({ to: `first-${email}` }).expect(202);
  await waitFor('the test mail', async () => smtp.messages.some((m) => m.to.includes(`first-${email}`)), 10_000);
  await waitFor('its run completed', async () => (await t.ctx.db('job_runs').where({ id: sent.body.job_run_id }).first()).state === 'completed');
});

it('SIGKILL of the primary under load: recovery within the bound, 503s meanwhile, every mail sent once, pause flag and schedulers kept', async () => {
  await t.http.post('/ops/queues/default/pause').set('Authorization', operator).expect(200);
  const primary = await group.primary();
  const reappliedBefore = linesWith(logs, 'queue pauses and job schedules re-applied to redis').length;

  let promotedAt = 0;
  const { samples, failedAt, recovery } = await failUnderLoad(async () => {
    await primary.kill();
    await group.failedOver(primary);
    promotedAt = Date.now();
  });
  const newPrimary = await group.primary();

  expect(newPrimary).not.toBe(primary);
  for (const ms of Object.values(recovery)) expect(ms).toBeLessThan(RECOVERY_BOUND_MS);
  // Most of it is Sentinel's (detection, agreement, promotion); the service's own part, finding
  // the new master, is the reconnect delay (at most 1 s) and a round trip or two.
  for (const ms of Object.values(recovery)) expect(ms - (promotedAt - failedAt)).toBeLessThan(2_500);
  expectOnlySuccessOr503(samples);
  expect(samples.filter((s) => s.start > failedAt + RECOVERY_BOUND_MS && !OK.has(s.status))).toEqual([]);
  await expectEachMailSentOnce(samples);

  // The reconnection re-applied the pause flags and schedulers, on the new primary.
  expect(linesWith(logs, 'queue pauses and job schedules re-applied to redis').length).toBeGreaterThan(reappliedBefore);
  expect(await t.ctx.jobs.queues.get('default')!.isPaused()).toBe(true);
  expect(await t.ctx.jobs.queues.get('maintenance')!.getJobScheduler(SCHEDULER)).toBeDefined();

  // Subscribers followed: a setting changed now reaches the others at once.
  await listeningOn(newPrimary);
  await setting('auth.registration_enabled', false);
  await waitFor('the serve process to close registration', async () => (await viaProc('POST', '/v1/auth/register', { email: `closed-${email}`, password: PASSWORD, transport: 'bearer' })).status === 403, 2_000);
  await setting('auth.registration_enabled', undefined);
  expect((await viaProc('GET', '/readyz')).status).toBe(200);
  await t.http.post('/ops/queues/default/resume').set('Authorization', operator).expect(200);
});

it('a frozen primary (SIGSTOP) under load: the same; once it thaws it is a replica, and writes go to the new primary', async () => {
  // The node killed above comes back as a replica: the group can fail over again.
  for (const node of group.nodes) if ((await node.role().catch(() => null)) === null) await group.rejoin(node);
  const primary = await group.primary();

  const { samples, failedAt, recovery } = await failUnderLoad(async () => {
    primary.pause();
    await group.failedOver(primary);
  });
  primary.resume();

  for (const ms of Object.values(recovery)) expect(ms).toBeLessThan(RECOVERY_BOUND_MS);
  expectOnlySuccessOr503(samples);
  expect(samples.filter((s) => s.start > failedAt + RECOVERY_BOUND_MS && !OK.has(s.status))).toEqual([]);
  await waitFor('the thawed primary to be made a replica', async () => (await primary.role().catch(() => null)) === 'slave', 20_000);
  for (let i = 0; i < 5; i++) {
    await t.http.post('/v1/auth/login').send(signIn).expect(200);
    expect((await viaProc('POST', '/v1/auth/login', signIn)).status).toBe(200);
  }
  await expectEachMailSentOnce(samples);
});

it('a primary demoted without Sentinel announcing it (READONLY): 503s, never 500, then the new master', async () => {
  const old = await group.primary();
  const next = group.nodes.find((n) => n !== old)!;
  await group.settled(old);
  // By hand, as an operator might: the replica promoted, the primary made its replica, and the
  // Sentinels told to watch the new one. No +switch-master, no CLIENT KILL: every connection of
  // the service stays on the old primary, which now refuses writes.
  await next.ask('REPLICAOF', 'NO', 'ONE');
  await old.ask('REPLICAOF', '127.0.0.1', next.port);
  for (const sentinel of group.sentinels) {
    await sentinel.ask('SENTINEL', 'REMOVE', MASTER_NAME);
    await sentinel.ask('SENTINEL', 'MONITOR', MASTER_NAME, '127.0.0.1', next.port, 2);
    await sentinel.ask('SENTINEL', 'SET', MASTER_NAME, 'auth-pass', group.password, 'down-after-milliseconds', DOWN_AFTER_MS, 'failover-timeout', FAILOVER_TIMEOUT_MS);
  }
  const answers: Sample[] = [];
  const recipients: string[] = [];
  const start = Date.now();
  for (let i = 0; Date.now() - start < 3_000; i++) {
    const to = `demoted-${i}-${email}`;
    for (const [who, what, send] of [
      ['app', 'sign-in', () => t.http.post('/v1/auth/login').send(signIn)],
      ['serve', 'sign-in', () => viaProc('POST', '/v1/auth/login', signIn)],
      ['app', 'mail', () => t.http.post('/ops/mail/test').set('Authorization', operator).send({ to })],
    ] as const) {
      const s = Date.now();
      const a = await send();
      answers.push({ who, what, status: a.status, code: a.body?.code, retryAfter: a.headers['retry-after'], start: s, end: Date.now() });
      if (what === 'mail' && a.status === 202) recipients.push(to);
    }
  }
  expectOnlySuccessOr503(answers);
  // Each connection's first write met READONLY (a 503), reconnected to the master the Sentinels
  // name, and every answer since is a success; the mails queued meanwhile are sent, once each.
  for (const who of ['app', 'serve']) expect(answers.find((a) => a.who === who && a.what === 'sign-in')?.status).toBe(503);
  expect(answers.slice(-10).map((a) => a.status)).toEqual(answers.slice(-10).map((a) => (a.what === 'mail' ? 202 : 200)));
  await expectSentOnce(recipients);
});
