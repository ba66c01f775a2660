// Compression (br or gzip, negotiated by Accept-Encoding; `Vary: Accept-Encoding`) of answers of
// 1 KiB and more, such as long lists. Smaller answers go as they are: compressing them saves less
// than it costs. The static answers (the contract, the Redoc bundle of /docs) come compressed
// already (src/http/precompressed.ts), which this middleware leaves alone.
import type { NextFunction, Request, Response } from 'express';
import compression from 'compression';

const COMPRESSION_THRESHOLD_BYTES = 1024;

/** compressible's table has no entry for YAML under application/. */
const YAML = /^application\/(?:[\w.+-]+\+)?yaml\b/i;

/**
 * Never answers marked `no-store` (under /v1/auth/ and /ops/: tokens, secrets, recovery codes,
 * operator data): compressing a secret beside text a client chose leaks the secret through the
 * answer's length (BREACH). They are small anyway.
 */
function shouldCompress(req: Request, res: Response): boolean {
  if (String(res.getHeader('Cache-Control') ?? '').includes('no-store')) return false;
  return compression.filter(req, res) || YAML.test(String(res.getHeader('Content-Type') ?? ''));
}

export function compress() {
  const middleware = compression({ threshold: COMPRESSION_THRESHOLD_BYTES, filter: shouldCompress });
  return (req: Request, res: Response, next: NextFunction): void => {
    // Without Accept-Encoding nothing is negotiated, and an answer already marked no-store
    // (everything under /v1/auth/ and /ops/, request-context.ts) is never compressed: either way
    // the answer is sent as it is, and the middleware's wrapping of the response is not worth its cost.
    if (req.headers['accept-encoding'] === undefined || String(res.getHeader('Cache-Control') ?? '').includes('no-store')) return next();
    middleware(req, res, next);
  };
}
