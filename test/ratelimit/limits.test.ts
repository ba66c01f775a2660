// Named rate limits against the real Redis: hit counts and refuses past the budget (429 with
// Retry-After), peek reads without counting, refund gives one attempt back, reset forgets the
// window, several limits count in one call (a script Redis may not know yet); and none of them
// run on a transaction's services.
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config';
import { createRedis } from '../../src/platform/redis';
import { Limits } from '../../src/ratelimit/limits';
import { RuntimeSettings } from '../../src/settings/runtime';
import { AppError } from '../../src/errors';
import { waitFor } from '../support/wait';

const config = loadConfig({ NODE_ENV: 'test', REDIS_PREFIX: `test:limits:${randomBytes(4).toString('hex')}:`, RATE_LIMIT_STEP_UP_PER_15_MINUTES: '2' });
const redis = createRedis(config.redis);
// The environment's defaults only (no database: nothing overrides them here).
const settings = { get: (key: any) => config.settingDefaults.values[key as keyof typeof config.settingDefaults.values] } as Pick<RuntimeSettings, 'get'>;
const limits = new Limits(redis, config.redisPrefix, settings);
beforeAll(() => waitFor('redis', async () => redis.status === 'ready'));
afterAll(() => redis.disconnect());

it('hit counts, then refuses with 429 and a Retry-After within the window', async () => {
  const attempt = { limit: 'step_up.user' as const, subject: 'usr_a' };
  expect((await limits.hit(attempt))[0]).toMatchObject({ count: 1, spent: false });
  expect((await limits.peek(attempt))).toMatchObject({ count: 2, spent: false }); // the next one would be the 2nd
  await limits.hit(attempt);
  expect(await limits.peek(attempt)).toMatchObject({ spent: true });
  const refused = await limits.hit(attempt).catch((e) => e);
  expect(refused).toBeInstanceOf(AppError);
  expect(refused).toMatchObject({ code: 'rate_limited', status: 429 });
  expect(Number(refused.extra.headers['Retry-After'])).toBeGreaterThan(0);
  expect(Number(refused.extra.headers['Retry-After'])).toBeLessThanOrEqual(15 * 60);
});

it('refund gives one attempt back; reset forgets them all', async () => {
  const attempt = { limit: 'step_up.user' as const, subject: 'usr_b' };
  await limits.hit(attempt);
  await limits.hit(attempt);
  await limits.refund(attempt);
  expect(await limits.peek(attempt)).toMatchObject({ count: 2, spent: false });
  await limits.reset(attempt);
  expect(await limits.peek(attempt)).toMatchObject({ count: 1, spent: false });
});

it('refuses to run inside a database transaction', async () => {
  const inTransaction = new Limits(redis, config.redisPrefix, settings, true);
  await expect(inTransaction.hit({ limit: 'step_up.user', subject: 'usr_c' })).rejects.toThrow(/inside a database transaction/);
});

it('counts several limits in one call, each key expiring with its own window from its first attempt', async () => {
  const email = { limit: 'password_forgot.email' as const, subject: 'someone@example.com' }; // 15 minutes
  const ip = { limit: 'login.ip' as const, subject: '203.0.113.7' }; // 1 minute
  const [a, b] = await limits.hit(email, ip);
  expect(a).toMatchObject({ count: 1, spent: false });
  expect(b).toMatchObject({ count: 1, spent: false });
  const keys = await redis.keys(`${config.redisPrefix}rl:*`);
  const ttl = async (limit: string) => redis.pttl(keys.find((k) => k.includes(`:${limit}:`))!);
  expect(await ttl('password_forgot.email')).toBeGreaterThan(14 * 60_000);
  expect(await ttl('login.ip')).toBeGreaterThan(0);
  expect(await ttl('login.ip')).toBeLessThanOrEqual(60_000);
  await redis.pexpire(keys.find((k) => k.includes(':login.ip:'))!, 5_000);
  expect((await limits.hit(ip))[0]).toMatchObject({ count: 2, retryAfterSeconds: 5 }); // a later attempt keeps the window's end
});

it('counts on a Redis that does not know the script yet (restarted, or a new master after a failover)', async () => {
  const attempt = { limit: 'step_up.user' as const, subject: 'usr_d' };
  await limits.hit(attempt);
  await redis.script('FLUSH');
  expect((await limits.hit(attempt))[0]).toMatchObject({ count: 2 });
});
