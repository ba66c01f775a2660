// The per-IP ceiling: every request counts against RATE_LIMIT_IP_PER_MINUTE per client IP (IPv6
// by /64), shared by instances through Redis; over it 429 rate_limited with Retry-After; probes are
// never counted; with Redis down each instance counts on its own (one log line), while the sign-in
// limits answer 503.
import { contractClient, startTestApp, type TestApp } from '../support/test-app';
import { createApp } from '../../src/app';
import { freePort } from '../support/ports';
import { ipBucket, SharedCounter, SYNC_MS } from '../../src/ratelimit/ip-ceiling';
import { sleep } from '../support/wait';

describe('ipBucket', () => {
  it('keeps IPv4 (also IPv4-mapped) and groups IPv6 by /64', () => {
    expect(ipBucket('203.0.113.7')).toBe('203.0.113.7');
    expect(ipBucket('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(ipBucket('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(ipBucket('2001:db8:1:2::9')).toBe('2001:db8:1:2::/64');
    expect(ipBucket('2001:0db8:0001:0002:0000:0000:0000:0001')).toBe('2001:db8:1:2::/64');
    expect(ipBucket('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(ipBucket('::1')).toBe('0:0:0:0::/64');
    expect(ipBucket('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});

describe('with a ceiling of 5 a minute', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_IP_PER_MINUTE: '5', TRUST_PROXY: 'true' });
  });
  afterAll(() => t?.close());

  it('answers 429 rate_limited with Retry-After past the ceiling, for every route, per IP', async () => {
    const ip = '203.0.113.20';
    for (let i = 0; i < 5; i++) await t.http.get('/v1/ping').set('X-Forwarded-For', ip).expect(200);
    const res = await t.http.get('/v1/ping').set('X-Forwarded-For', ip).expect(429);
    expect(res.body).toMatchObject({ code: 'rate_limited', status: 429 });
    const retryAfter = Number(res.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // The ceiling as a RateLimit policy: spent until the window ends.
    expect(res.headers['ratelimit-policy']).toBe('"ip";q=5;w=60');
    expect(res.headers.ratelimit).toBe(`"ip";r=0;t=${retryAfter}`);
    // Any other operation from that address, signed in or not.
    const login = await t.http.post('/v1/auth/login').set('X-Forwarded-For', ip).send({ email: 'a@example.com', password: 'whatever' }).expect(429);
    expect(login.body.code).toBe('rate_limited');
    await t.http.get('/v1/auth/me').set('X-Forwarded-For', ip).expect(429);
    // Another address is not affected.
    await t.http.get('/v1/ping').set('X-Forwarded-For', '203.0.113.21').expect(200);
  });

  it('never counts /healthz and /readyz', async () => {
    const ip = '203.0.113.30';
    for (let i = 0; i < 8; i++) {
      await t.http.get('/healthz').set('X-Forwarded-For', ip).expect(200);
      await t.http.get('/readyz').set('X-Forwarded-For', ip).expect(200);
    }
    for (let i = 0; i < 5; i++) await t.http.get('/v1/ping').set('X-Forwarded-For', ip).expect(200);
    await t.http.get('/v1/ping').set('X-Forwarded-For', ip).expect(429);
    await t.http.get('/healthz').set('X-Forwarded-For', ip).expect(200);
  });

  it('counts an IPv6 /64 as one client', async () => {
    for (let i = 1; i <= 5; i++) await t.http.get('/v1/ping').set('X-Forwarded-For', `2001:db8:aa:1::${i}`).expect(200);
    await t.http.get('/v1/ping').set('X-Forwarded-For', '2001:db8:aa:1:ffff::9').expect(429);
    await t.http.get('/v1/ping').set('X-Forwarded-For', '2001:db8:aa:2::1').expect(200);
  });

  it('shares the count through Redis: a second instance sees the requests of the first', async () => {
    const ip = '203.0.113.40';
    const other = contractClient(createApp(t.ctx)); // another app instance: no in-process state shared
    for (let i = 0; i < 3; i++) await t.http.get('/v1/ping').set('X-Forwarded-For', ip).expect(200);
    await sleep(SYNC_MS * 3); // the first instance has sent its counts
    await other.get('/v1/ping').set('X-Forwarded-For', ip).expect(200); // 4, learnt when it sends its own
    await sleep(SYNC_MS * 3);
    await other.get('/v1/ping').set('X-Forwarded-For', ip).expect(200); // 5
    await other.get('/v1/ping').set('X-Forwarded-For', ip).expect(429); // refused requests count too
    await sleep(SYNC_MS * 3);
    // The first instance learns the total when it sends its next count (that request may pass).
    await t.http.get('/v1/ping').set('X-Forwarded-For', ip);
    await sleep(SYNC_MS * 3);
    await t.http.get('/v1/ping').set('X-Forwarded-For', ip).expect(429);
    await sleep(SYNC_MS * 3);
    const keys = await t.ctx.redis.keys(`${t.ctx.config.redisPrefix}rl:ip:${ip}:*`);
    expect(keys).toHaveLength(1); // one window
    expect(Number(await t.ctx.redis.get(keys[0]!))).toBe(8);
  });
});

describe('SharedCounter', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  it('counts in one-minute windows aligned to the clock, and sends its counts in one pipeline', async () => {
    let now = Date.UTC(2026, 10, 22, 12, 0, 50);
    const prefix = `${t.ctx.config.redisPrefix}test-counter:`;
    const counter = new SharedCounter(t.ctx.redis, prefix, t.ctx.dependencies, () => now);
    expect(counter.hit('a')).toEqual({ count: 1, resetInMs: 10_000 });
    expect(counter.hit('a').count).toBe(2);
    expect(counter.hit('b').count).toBe(1);
    await counter.sync();
    const window = Math.floor(now / 60_000);
    expect(await t.ctx.redis.get(`${prefix}a:${window}`)).toBe('2');
    expect(await t.ctx.redis.get(`${prefix}b:${window}`)).toBe('1');
    now += 10_000; // the next minute: a fresh count
    expect(counter.hit('a')).toEqual({ count: 1, resetInMs: 60_000 });
    await counter.sync();
    expect(await t.ctx.redis.get(`${prefix}a:${window + 1}`)).toBe('1');
    expect(await t.ctx.redis.pttl(`${prefix}a:${window + 1}`)).toBeGreaterThan(60_000);
  });
});

describe('with Redis unreachable', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ REDIS_URL: `redis://127.0.0.1:${await freePort()}`, RATE_LIMIT_IP_PER_MINUTE: '4', BCRYPT_COST: '4', TRUST_PROXY: 'true' });
  });
  afterAll(() => t?.close());

  it('each instance goes on counting on its own; the monitor logs the outage, once', async () => {
    const logged = [jest.spyOn(t.ctx.logger, 'warn'), jest.spyOn(t.ctx.logger, 'error')];
    const ip = '203.0.113.50';
    for (let i = 0; i < 4; i++) {
      await t.http.get('/v1/ping').set('X-Forwarded-For', ip).expect(200);
      await sleep(SYNC_MS * 2); // each sync fails
    }
    await t.http.get('/v1/ping').set('X-Forwarded-For', ip).expect(429);
    // Logged when Redis was first found down (at start); the failed syncs add no line.
    expect(t.ctx.dependencies.isDown('redis')).toBe(true);
    expect(logged.flatMap((spy) => spy.mock.calls)).toEqual([]);
    for (const spy of logged) spy.mockRestore();
  });

  it('but the sign-in limits do not: login answers 503 unavailable', async () => {
    const res = await t.http.post('/v1/auth/login').set('X-Forwarded-For', '203.0.113.51').send({ email: 'a@example.com', password: 'whatever' }).expect(503);
    expect(res.body.code).toBe('unavailable');
    expect(res.headers['retry-after']).toBeDefined();
  });
});
