// Rate limits in Redis, shared by every instance: a fixed window per key, counted with one
// round trip (INCR + PEXPIRE NX in a MULTI). Exceeding it answers 429 `rate_limited` with Retry-After.
import type { RedisClient } from '../platform/redis';
import { AppError } from '../http/problem';

export interface Limit {
  /** Requests allowed per window. */
  max: number;
  windowSeconds: number;
}

export interface LimitResult {
  allowed: boolean;
  remaining: number;
  retryAfterSeconds: number;
}

export async function hit(redis: RedisClient, prefix: string, key: string, limit: Limit): Promise<LimitResult> {
  const redisKey = `${prefix}rl:${key}`;
  const result = await redis.multi().incr(redisKey).pexpire(redisKey, limit.windowSeconds * 1000, 'NX').pttl(redisKey).exec();
  const count = Number(result?.[0]?.[1] ?? 0);
  const ttlMs = Number(result?.[2]?.[1] ?? limit.windowSeconds * 1000);
  return {
    allowed: count <= limit.max,
    remaining: Math.max(0, limit.max - count),
    retryAfterSeconds: Math.max(1, Math.ceil(ttlMs / 1000)),
  };
}

/** Counts one request against each limit; throws 429 when any is exceeded. */
export async function enforce(redis: RedisClient, prefix: string, checks: { key: string; limit: Limit }[]): Promise<void> {
  const results = await Promise.all(checks.map((c) => hit(redis, prefix, c.key, c.limit)));
  const blocked = results.filter((r) => !r.allowed);
  if (blocked.length) {
    const retryAfter = Math.max(...blocked.map((r) => r.retryAfterSeconds));
    throw new AppError('rate_limited', 429, `Too many requests. Try again in ${retryAfter} seconds.`, { headers: { 'Retry-After': String(retryAfter) } });
  }
}

/** Forgets a key (e.g. the failed-login counter after a successful sign-in). */
export async function reset(redis: RedisClient, prefix: string, key: string): Promise<void> {
  await redis.del(`${prefix}rl:${key}`);
}
