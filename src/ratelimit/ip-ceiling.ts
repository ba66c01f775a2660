// The per-IP ceiling (DESIGN 6): every request counts against `rateLimits.ipPerMinute` for its
// client IP, in Redis, shared by every instance; over it answers 429 `rate_limited` + Retry-After.
// /healthz and /readyz are not counted (probes must never be throttled).
//
// FAILS OPEN: when Redis cannot count (down, or slower than COUNT_TIMEOUT_MS) the request goes
// through uncounted, and one warning is logged per outage (plus one line when counting resumes).
// The ceiling is a coarse abuse guard; refusing all traffic because Redis blinked would be worse.
// The login/register limits (src/accounts/sign-in.ts) do NOT fail open: they answer 503.
import { isIPv4, isIPv6 } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import type { AppContext } from '../app-context';
import { AppError } from '../http/problem';
import { hit } from './limiter';

const UNCOUNTED_PATHS = new Set(['/healthz', '/readyz']);
const COUNT_TIMEOUT_MS = 500;

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

export function ipCeiling(app: AppContext) {
  let failingOpen = false;
  return (req: Request, _res: Response, next: NextFunction): void => {
    const max = app.config.rateLimits.ipPerMinute;
    if (max === 0 || UNCOUNTED_PATHS.has(req.path)) return next(); // 0 turns the ceiling off
    const ip = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`redis did not answer within ${COUNT_TIMEOUT_MS} ms`)), COUNT_TIMEOUT_MS);
    });
    Promise.race([hit(app.redis, app.config.redisPrefix, `ip:${ipBucket(ip)}`, { max, windowSeconds: 60 }), timeout]).then(
      (result) => {
        clearTimeout(timer);
        if (failingOpen) {
          failingOpen = false;
          app.logger.info('per-ip ceiling counting again');
        }
        if (result.allowed) return next();
        const retryAfter = String(result.retryAfterSeconds);
        next(new AppError('rate_limited', 429, `Too many requests from this address. Try again in ${retryAfter} seconds.`, { headers: { 'Retry-After': retryAfter } }));
      },
      (err: unknown) => {
        clearTimeout(timer);
        if (!failingOpen) {
          failingOpen = true;
          app.logger.warn('per-ip ceiling cannot count (redis unavailable): letting requests through uncounted', {
            error: err instanceof Error ? err.message : String(err),
          });
        }
        next();
      },
    );
  };
}
