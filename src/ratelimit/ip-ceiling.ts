// The per-IP ceiling (DESIGN 6): every request counts against the setting `rate_limit.ip_per_minute` for its
// client IP; over it answers 429 `rate_limited` + Retry-After, with RateLimit headers naming the
// policy `ip`. /healthz and /readyz are not counted (probes must never be throttled).
//
// Shared by every instance through Redis, without a Redis round trip per request (it cost as much
// CPU as the rest of a request): each instance counts in memory and adds its counts to Redis in
// one pipeline every SYNC_MS (INCRBY per client, in fixed one-minute windows aligned to the clock),
// learning the total of all instances from the answer. An instance thus learns of the others'
// requests each time it sends its own counts (every SYNC_MS while the client keeps sending to it):
// a client spread over several instances can overshoot the ceiling by what it sends meanwhile.
//
// When Redis cannot count (down, or slower than SYNC_TIMEOUT_MS) each instance goes on counting on
// its own and keeps the unsent counts for later; the failure goes to the dependency monitor, which
// logs the outage once when it starts and once when it ends. The login/register limits (src/ratelimit/limits.ts) count in
// Redis on every attempt and answer 503 without it.
import { isIPv4, isIPv6 } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import type { Config } from '../config';
import type { RuntimeSettings } from '../settings/runtime';
import type { DependencyReporter } from '../platform/dependencies';
import type { RedisClient } from '../platform/redis';
import { rateLimited } from '../errors';
import { rateLimitFields } from './fields';

const UNCOUNTED_PATHS = new Set(['/healthz', '/readyz']);
const WINDOW_MS = 60_000;
export const SYNC_MS = 100;
const SYNC_TIMEOUT_MS = 1_000;

/**
 * The bucket a client IP counts in: IPv4 as is (also when IPv4-mapped), IPv6 by its /64 (one
 * subscriber usually holds a whole /64, so per-address buckets would be trivially dodged).
 */
export function ipBucket(ip: string): string {
  const bare = ip.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return mapped[1]!;
  if (isIPv4(bare) || !isIPv6(bare)) return bare;
  const groups = expandIPv6(bare);
  return `${groups.slice(0, 4).join(':')}::/64`;
}

function expandIPv6(ip: string): string[] {
  let text = ip.toLowerCase();
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = text.slice(0, v4.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((g) => g.replace(/^0+(?=.)/, ''));
}

interface Bucket {
  window: number;
  /** Counted here, not yet sent to Redis. */
  pending: number;
  /** Sent, not yet answered. */
  sending: number;
  /** The total of every instance in this window, as Redis last answered. */
  shared: number;
}

/** Counts per client in fixed windows, here and (every SYNC_MS) in Redis. */
export class SharedCounter {
  private readonly buckets = new Map<string, Bucket>();
  private timer: NodeJS.Timeout | null = null;

  /**
   * `dependencies` hears of Redis failing and answering (the monitor logs the outage once; the
   * ceiling meanwhile counts per instance, as the README says).
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
    private readonly dependencies: DependencyReporter,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request of `client`; answers the count in this window and the ms until it ends. */
  hit(client: string): { count: number; resetInMs: number } {
    const now = this.now();
    const window = Math.floor(now / WINDOW_MS);
    let bucket = this.buckets.get(client);
    if (!bucket || bucket.window !== window) {
      bucket = { window, pending: 0, sending: 0, shared: 0 };
      this.buckets.set(client, bucket);
    }
    bucket.pending++;
    this.timer ??= setTimeout(() => void this.sync(), SYNC_MS).unref();
    return { count: bucket.shared + bucket.sending + bucket.pending, resetInMs: (window + 1) * WINDOW_MS - now };
  }

  /** Sends every pending count in one pipeline and takes the totals Redis answers. */
  async sync(): Promise<void> {
    this.timer = null;
    const current = Math.floor(this.now() / WINDOW_MS);
    const batch: [string, Bucket, number][] = [];
    for (const [client, bucket] of this.buckets) {
      if (bucket.window < current && !bucket.pending && !bucket.sending) this.buckets.delete(client);
      else if (bucket.pending && !bucket.sending) {
        batch.push([client, bucket, bucket.pending]);
        bucket.sending = bucket.pending;
        bucket.pending = 0;
      }
    }
    if (!batch.length) return;
    const pipeline = this.redis.pipeline();
    for (const [client, bucket, count] of batch) {
      const key = `${this.keyPrefix}${client}:${bucket.window}`;
      pipeline.incrby(key, count).pexpire(key, WINDOW_MS * 2);
    }
    let timeout: NodeJS.Timeout | undefined;
    try {
      const results = await Promise.race([
        pipeline.exec(),
        new Promise<never>((_, reject) => {
          timeout = setTimeout(() => reject(new Error(`redis did not answer within ${SYNC_TIMEOUT_MS} ms`)), SYNC_TIMEOUT_MS);
        }),
      ]);
      batch.forEach(([, bucket], i) => {
        const [err, total] = results?.[i * 2] ?? [new Error('no answer'), null];
        if (err) throw err;
        bucket.shared = Number(total);
        bucket.sending = 0;
      });
      this.dependencies.up('redis');
    } catch (err) {
      // Kept for the next sync: counted here meanwhile, shared once Redis answers again.
      for (const [, bucket] of batch) {
        bucket.pending += bucket.sending;
        bucket.sending = 0;
      }
      this.dependencies.failed('redis', err);
    } finally {
      clearTimeout(timeout);
      if ([...this.buckets.values()].some((b) => b.pending)) this.timer ??= setTimeout(() => void this.sync(), SYNC_MS).unref();
    }
  }
}

/** The middleware; `app` is the composition root's context (what it reads of it, named). */
export function ipCeiling(app: { config: Config; redis: RedisClient; dependencies: DependencyReporter; runtimeSettings: RuntimeSettings; now: () => Date }) {
  const counter = new SharedCounter(app.redis, `${app.config.redisPrefix}rl:ip:`, app.dependencies, () => app.now().getTime());
  return (req: Request, res: Response, next: NextFunction): void => {
    const max = app.runtimeSettings.get('rate_limit.ip_per_minute');
    if (max === 0 || UNCOUNTED_PATHS.has(req.path)) return next(); // 0 turns the ceiling off
    const { count, resetInMs } = counter.hit(ipBucket(res.locals.ip || 'unknown'));
    if (count <= max) return next();
    const retryAfter = Math.max(1, Math.ceil(resetInMs / 1000));
    const fields = rateLimitFields([{ limit: 'ip', max, windowSeconds: WINDOW_MS / 1000, used: count, resetSeconds: retryAfter }]);
    for (const name in fields) res.setHeader(name, fields[name]!);
    next(rateLimited('ip', retryAfter, `Too many requests from this address. Try again in ${retryAfter} seconds.`));
  };
}
