import Redis from 'ioredis';

export type RedisClient = Redis;

export interface RedisTimeouts {
  connectMs: number;
  /** A command unanswered this long fails ("Command timed out"): a Redis that stopped answering. */
  commandMs: number;
}

/** Options of every connection that serves requests: fail fast, reconnect in the background. */
export function redisOptions(timeouts: RedisTimeouts) {
  return {
    // No offline queue and one try per command: while Redis is down a command fails at once
    // instead of waiting for a reconnection, and the request answers 503.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: timeouts.connectMs,
    commandTimeout: timeouts.commandMs,
    retryStrategy: (attempt: number) => Math.min(attempt * 200, 2_000),
  };
}

/**
 * The connection requests use (rate limits, probes). Its 'error' and 'ready' events are reported
 * to the dependency monitor by the composition (app-context-factory.ts), not logged here.
 */
export function createRedis(url: string, timeouts: RedisTimeouts = { connectMs: 1_000, commandMs: 500 }): RedisClient {
  const client = new Redis(url, { ...redisOptions(timeouts), lazyConnect: true });
  client.on('error', () => undefined); // without a listener ioredis prints every reconnect failure
  client.connect().catch(() => undefined); // retryStrategy keeps trying
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
