// Scratch resources shared by the benchmarks: a database URL on the bench server, and cleanup of
// the Redis keys under a bench prefix.
import Redis from 'ioredis';

/** URL of `database` on the bench PostgreSQL (BENCH_DATABASE_URL, default the local trust server). */
export function adminUrl(database: string): string {
  const url = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  url.pathname = `/${database}`;
  return url.toString();
}

/** Deletes the keys under the bench prefix only (SCAN + UNLINK; never FLUSHALL). */
export async function deleteKeys(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}
