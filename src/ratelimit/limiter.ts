// Rate limits in Redis, shared by every instance: a fixed window per key, counted with one round
// trip (INCR + PEXPIRE NX + PTTL per limit, all of a request's limits in one MULTI). Exceeding one
// answers 429 `rate_limited` with Retry-After.
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

/** Counts one request against each limit, for all of them in one MULTI (one round trip). */
export async function hitAll(redis: RedisClient, prefix: string, checks: { key: string; limit: Limit }[]): Promise<LimitResult[]> {
  const multi = redis.multi();
  for (const { key, limit } of checks) {
    const redisKey = `${prefix}rl:${key}`;
    multi.incr(redisKey).pexpire(redisKey, limit.windowSeconds * 1000, 'NX').pttl(redisKey);
  }
  const result = await multi.exec();
  return checks.map(({ limit }, i) => {
    const count = Number(result?.[i * 3]?.[1] ?? 0);
    const ttlMs = Number(result?.[i * 3 + 2]?.[1] ?? limit.windowSeconds * 1000);
    return {
      allowed: count <= limit.max,
      remaining: Math.max(0, limit.max - count),
      retryAfterSeconds: Math.max(1, Math.ceil(ttlMs / 1000)),
    };
  });
}

/** Counts one request against each limit; throws 429 when any is exceeded. */
export async function enforce(redis: RedisClient, prefix: string, checks: { key: string; limit: Limit }[]): Promise<void> {
  const blocked = (await hitAll(redis, prefix, checks)).filter((r) => !r.allowed);
  if (blocked.length) {
    const retryAfter = Math.max(...blocked.map((r) => r.retryAfterSeconds));
    throw new AppError('rate_limited', 429, `Too many requests. Try again in ${retryAfter} seconds.`, { headers: { 'Retry-After': String(retryAfter) } });
  }
}

/** Forgets a key (e.g. the failed-login counter after a successful sign-in). */
export async function reset(redis: RedisClient, prefix: string, key: string): Promise<void> {
  await redis.del(`${prefix}rl:${key}`);
}
