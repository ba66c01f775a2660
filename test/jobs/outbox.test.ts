// The outbox: a run committed while Redis is unreachable for the producer stays `available` and is
// handed over later by the sweeper, and runs exactly once however often it is handed over.
import net from 'node:net';
import { startTestApp, startPeer, contractClient, type TestApp } from '../support/test-app';
import { createApp } from '../../src/app';
import { freePort } from '../support/ports';
import { signedInUser } from '../support/users';
import { bullJobId } from '../../src/jobs/system';
import type { AppContext } from '../../src/app-context';
import type { JobKind } from '../../src/jobs/kinds';
import { waitFor } from '../support/wait';

const calls = new Map<number, number>();
const gates = new Map<number, () => void>();
const kinds: JobKind<AppContext>[] = [
  {
    name: 'test.counted',
    description: 'counts its invocations',
    defaults: { enabled: true, max_attempts: 3, priority: 0, queue: 'default', schedule: null, timeout: '5s' },
    needsPayload: false,
    async handle(_payload, { run }) {
      calls.set(run.id, (calls.get(run.id) ?? 0) + 1);
    },
  },
  {
    name: 'test.held',
    description: 'waits until the test releases it',
    defaults: { enabled: true, max_attempts: 1, priority: 0, queue: 'default', schedule: null, timeout: '1m0s' },
    needsPayload: false,
    async handle(_payload, { run }) {
      calls.set(run.id, (calls.get(run.id) ?? 0) + 1);
      await new Promise<void>((resolve) => {
        const cap = setTimeout(resolve, 20_000);
        cap.unref();
        gates.set(run.id, () => {
          clearTimeout(cap);
          resolve();
        });
      });
    },
  },
];

let t: TestApp; // the worker instance, Redis reachable
let producer: AppContext; // an API instance whose Redis is a closed port
let closeProducer: () => Promise<void>;
let auth: string;
const system = { actor: { kind: 'system' as const, id: null } };

beforeAll(async () => {
  t = await startTestApp({}, { workers: true, jobKinds: kinds });
  auth = (await signedInUser(t.ctx, { operator: true })).auth;
  ({ ctx: producer, close: closeProducer } = await startPeer(t, { redisUrl: `redis://127.0.0.1:${await freePort()}`, jobKinds: kinds }));
});
afterAll(async () => {
  for (const release of gates.values()) release();
  await closeProducer();
  await t.close();
});

const apiRun = async (id: number) => (await t.http.get(`/ops/jobs/runs/${id}`).set('Authorization', auth).expect(200)).body;
const waitForState = (id: number, state: string) =>
  waitFor(`run ${id} to be ${state}`, async () => {
    const run = await apiRun(id);
    return run.state === state ? run : null;
  });
const handedOverAt = async (id: number) => (await t.ctx.db('job_runs').where({ id }).first('handed_over_at')).handed_over_at as Date | null;
const bullJob = (id: number) => t.ctx.jobs.queues.get('default')!.getJob(bullJobId(id));
const waitUntilBullForgets = (id: number) => waitFor(`BullMQ to drop job ${id}`, async () => !(await bullJob(id)));

it('a run committed while Redis is down stays available, then the sweeper hands it over and it runs exactly once', async () => {
  const run = await producer.db.transaction((trx) => producer.jobs.enqueue(trx, 'test.counted', {}, system));
  // handOver neither throws nor waits for Redis while it is unreachable: it hands over nothing.
  expect(await producer.jobs.handOver([run])).toEqual([]);
  expect(await handedOverAt(run.id)).toBeNull();
  expect(await bullJob(run.id)).toBeFalsy(); // BullMQ holds nothing: no worker can start it
  expect(await apiRun(run.id)).toMatchObject({ state: 'available', attempt: 0, attempted_at: null });
  expect(calls.get(run.id)).toBeUndefined();

  // The producer's own sweeper cannot reach Redis either: nothing changes, nothing throws.
  t.clock.advance(3_000); // the sweeper leaves runs younger than 2 s to their own hand-over
  expect(await producer.jobs.sweep()).toBe(0);
  expect(await handedOverAt(run.id)).toBeNull();

  // The worker instance's sweeper hands it over.
  await t.ctx.jobs.sweep();
  expect(await handedOverAt(run.id)).not.toBeNull();
  const done = await waitForState(run.id, 'completed');
  expect(done).toMatchObject({ attempt: 1, errors: [] });
  await waitUntilBullForgets(run.id);
  expect(calls.get(run.id)).toBe(1);

  // Sweeping again, or handing the finished run over again, never runs it twice.
  expect(await t.ctx.jobs.sweep()).toBe(0);
  await t.ctx.jobs.handOver([run]);
  await waitUntilBullForgets(run.id); // the re-added job was taken and found nothing to do
  expect(await t.ctx.jobs.sweep()).toBe(0);
  expect(await bullJob(run.id)).toBeFalsy();
  expect(calls.get(run.id)).toBe(1);
  expect(await apiRun(run.id)).toEqual(done);
});

it('the sweeper leaves runs it just saw committed to their own hand-over', async () => {
  const run = await producer.jobs.enqueue(producer.db, 'test.counted', {}, system);
  await producer.jobs.handOver([run]);
  const swept = await t.ctx.jobs.sweep();
  expect(swept).toBe(0);
  expect(await handedOverAt(run.id)).toBeNull();
  t.clock.advance(3_000);
  await t.ctx.jobs.sweep();
  expect(await handedOverAt(run.id)).not.toBeNull();
  await waitForState(run.id, 'completed');
  expect(calls.get(run.id)).toBe(1);
});

it('the sweeper marks a delayed run it finds in BullMQ without adding it again', async () => {
  const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.counted', {}, system, { delayMs: 60_000 });
  expect(await t.ctx.jobs.handOver([run])).toEqual([run.id]);
  expect(await handedOverAt(run.id)).toBeNull(); // handOver writes nothing to the database
  t.clock.advance(3_000);
  expect(await t.ctx.jobs.sweep()).toBe(0);
  expect(await handedOverAt(run.id)).not.toBeNull();
  expect(await (await bullJob(run.id))?.isDelayed()).toBe(true);
  expect((await apiRun(run.id)).state).toBe('scheduled');
});

it('a delayed run handed over by the sweeper keeps its delay', async () => {
  const run = await producer.jobs.enqueue(producer.db, 'test.counted', {}, system, { delayMs: 60_000 });
  await producer.jobs.handOver([run]);
  t.clock.advance(3_000);
  await t.ctx.jobs.sweep();
  expect(await handedOverAt(run.id)).not.toBeNull();
  expect(await (await bullJob(run.id))?.isDelayed()).toBe(true);
  expect((await apiRun(run.id)).state).toBe('scheduled');
  await t.http.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(200);
  expect(await bullJob(run.id)).toBeFalsy();
});

it('a run BullMQ already holds is not added again, and a sweep while it runs does not lose or repeat it', async () => {
  // Handed over, but the mark was lost (e.g. the database hiccuped after the add).
  const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.held', {}, system);
  await t.ctx.jobs.handOver([run]);
  const release = await waitFor('the run to start', async () => gates.get(run.id));
  await t.ctx.db('job_runs').where({ id: run.id }).update({ handed_over_at: null });
  t.clock.advance(3_000);
  await t.ctx.jobs.sweep();
  await t.ctx.jobs.handOver([run]);
  release();
  const done = await waitForState(run.id, 'completed');
  await waitUntilBullForgets(run.id); // BullMQ holds nothing more that could start it again
  expect(calls.get(run.id)).toBe(1);
  expect(await apiRun(run.id)).toEqual(done);
});

it('an operator retry hands a run over even when Redis was down at its first hand-over', async () => {
  const run = await producer.jobs.enqueue(producer.db, 'test.counted', {}, system, { delayMs: 60_000 });
  await producer.jobs.handOver([run]);
  expect(await handedOverAt(run.id)).toBeNull();
  const res = await t.http.post(`/ops/jobs/runs/${run.id}/retry`).set('Authorization', auth).expect(200);
  expect(res.body.state).toBe('available');
  await waitForState(run.id, 'completed');
  expect(calls.get(run.id)).toBe(1);
});

/** A TCP proxy to the test Redis that the test can take down and bring back on the same port. */
class RedisProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  async up(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }

  async down(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => (this.server ? this.server.close(resolve) : resolve(undefined)));
    this.server = null;
  }
}

it('cancelling a running run from an instance without Redis answers 503 and records nothing', async () => {
  const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.held', {}, system);
  await t.ctx.jobs.handOver([run]);
  const release = await waitFor('the run to start', async () => gates.get(run.id));
  const api = contractClient(createApp(producer));
  await api.get(`/ops/jobs/runs/${run.id}`).set('Authorization', auth).expect(200); // that instance serves the database fine
  const res = await api.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).expect(503);
  expect(res.body.code).toBe('unavailable');
  expect(await t.ctx.db('audit_events').where({ target_id: String(run.id) })).toHaveLength(0);
  release();
  const done = await waitForState(run.id, 'completed');
  expect(done.attempt).toBe(1);
  expect(calls.get(run.id)).toBe(1);
});

it('cancelling a waiting run from an instance whose Redis never answered is prompt, and the job left in BullMQ does nothing', async () => {
  const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.counted', {}, system, { delayMs: 60_000 });
  await t.ctx.jobs.handOver([run]);
  const api = contractClient(createApp(producer));
  const start = Date.now();
  // BullMQ waits for a connection never made instead of failing: this request hung.
  const res = await api.post(`/ops/jobs/runs/${run.id}/cancel`).set('Authorization', auth).timeout(5_000).expect(200);
  expect(Date.now() - start).toBeLessThan(2_500);
  expect(res.body.state).toBe('cancelled');
  await (await bullJob(run.id))!.promote();
  await waitUntilBullForgets(run.id);
  expect(calls.get(run.id)).toBeUndefined();
  expect((await apiRun(run.id)).state).toBe('cancelled');
});

describe('a producer whose Redis goes away and comes back', () => {
  let proxy: RedisProxy;
  let api: AppContext;
  let closeApi: () => Promise<void>;
  beforeAll(async () => {
    const target = new URL(t.ctx.config.redis.url!);
    proxy = new RedisProxy(await freePort(), { host: target.hostname, port: Number(target.port || 6379) });
    ({ ctx: api, close: closeApi } = await startPeer(t, { redisUrl: `redis://127.0.0.1:${proxy.port}`, jobKinds: kinds }));
  });
  afterAll(async () => {
    await closeApi();
    await proxy.down();
  });

  /** The producer's own sweeper, until Redis is back for it and the run is handed over. */
  const sweepUntilHandedOver = (id: number) =>
    waitFor(`run ${id} handed over by the producer`, async () => {
      await api.jobs.sweep();
      return handedOverAt(id);
    });

  it('down since start: runs committed meanwhile are handed over by its sweeper once Redis is back, exactly once', async () => {
    const run = await api.jobs.enqueue(api.db, 'test.counted', {}, system);
    expect(await api.jobs.handOver([run])).toEqual([]);
    expect(await handedOverAt(run.id)).toBeNull();
    await proxy.up();
    t.clock.advance(3_000);
    await sweepUntilHandedOver(run.id);
    await waitForState(run.id, 'completed');
    await waitUntilBullForgets(run.id);
    await api.jobs.sweep();
    expect(await api.jobs.sweep()).toBe(0);
    expect(calls.get(run.id)).toBe(1);
  });

  it('down for a moment after working: handOver fails fast, the outbox keeps the run, and it runs exactly once', async () => {
    const before = await api.jobs.enqueue(api.db, 'test.counted', {}, system);
    expect(await api.jobs.handOver([before])).toEqual([before.id]);
    await waitForState(before.id, 'completed');
    expect(await handedOverAt(before.id)).not.toBeNull(); // marked by the worker that started it

    await proxy.down();
    const run = await api.jobs.enqueue(api.db, 'test.counted', {}, system);
    expect(await api.jobs.handOver([run])).toEqual([]);
    expect(await handedOverAt(run.id)).toBeNull();
    expect((await apiRun(run.id)).state).toBe('available');

    await proxy.up();
    t.clock.advance(3_000);
    await sweepUntilHandedOver(run.id);
    await waitForState(run.id, 'completed');
    await waitUntilBullForgets(run.id);
    expect(calls.get(run.id)).toBe(1);
    expect(calls.get(before.id)).toBe(1);
  });
});

describe('runs BullMQ lost (Redis restarted without its data)', () => {
  it('a waiting run whose job is gone is handed over again once it is a minute overdue, and runs once', async () => {
    const run = await enqueueHandedOver({ delayMs: 60_000 });
    await t.ctx.jobs.queues.get('default')!.remove(bullJobId(run.id)); // Redis lost it
    t.clock.advance(90_000); // due for 30 s: not yet considered lost
    await t.ctx.jobs.sweep();
    expect(await bullJob(run.id)).toBeFalsy();
    expect(await apiRun(run.id)).toMatchObject({ state: 'available', attempt: 0 }); // due, not yet started
    expect(calls.get(run.id)).toBeUndefined();

    t.clock.advance(60_000);
    await t.ctx.jobs.sweep(); // (the periodic sweeper may have been first)
    const done = await waitForState(run.id, 'completed');
    expect(done).toMatchObject({ attempt: 1, errors: [] });
    await waitUntilBullForgets(run.id);
    await t.ctx.jobs.sweep();
    expect(calls.get(run.id)).toBe(1);
  });

  it('a running run whose job is gone past its timeout records the lost attempt and continues', async () => {
    const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.counted', {}, system);
    // Attempt 1 started, then its worker and BullMQ's copy of the job were both lost.
    await t.ctx.db('job_runs').where({ id: run.id }).update({ state: 'running', attempt: 1, attempted_at: t.clock.now, handed_over_at: t.clock.now });
    t.clock.advance(30_000);
    await t.ctx.jobs.sweep();
    expect((await apiRun(run.id)).state).toBe('running'); // within timeout (5 s) + a minute: left alone
    t.clock.advance(40_000);
    await t.ctx.jobs.sweep();
    const done = await waitForState(run.id, 'completed');
    expect(done).toMatchObject({ attempt: 2, errors: [{ attempt: 1, message: expect.stringContaining('stopped before it finished') }] });
    expect(calls.get(run.id)).toBe(1);
  });
});

/** A run handed over and marked so (a delayed one is marked by the sweeper, which finds it in BullMQ). */
async function enqueueHandedOver(opts: { delayMs?: number } = {}) {
  const run = await t.ctx.jobs.enqueue(t.ctx.db, 'test.counted', {}, system, opts);
  await t.ctx.jobs.handOver([run]);
  if (opts.delayMs) {
    t.clock.advance(3_000);
    expect(await t.ctx.jobs.sweep()).toBe(0);
    expect(await handedOverAt(run.id)).not.toBeNull();
  }
  return run;
}
