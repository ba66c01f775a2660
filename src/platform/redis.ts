import Redis from 'ioredis';
import type { Logger } from '../logger';

export type RedisClient = Redis;

/**
 * Fails fast while Redis is down (no offline queue, one try per command), so requests answer 503
 * at once instead of hanging; reconnects in the background with a capped backoff.
 */
export function createRedis(url: string, logger: Logger): RedisClient {
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 3_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 5_000),
  });
  let down = false;
  client.on('error', (err: Error) => {
    if (!down) logger.error('redis unreachable', { url: redactUrl(url), error: err.message });
    down = true;
  });
  client.on('ready', () => {
    if (down) logger.info('redis reachable again', { url: redactUrl(url) });
    down = false;
  });
  client.connect().catch(() => undefined); // the error handler above logs it; retryStrategy keeps trying
  return client;
}

export async function pingRedis(redis: RedisClient): Promise<number> {
  const start = performance.now();
  await redis.ping();
  return performance.now() - start;
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'invalid url';
  }
}
