// Request ids (kept from a valid incoming X-Request-Id, else made), Cache-Control: no-store under
// /v1/auth/ and /ops/, and one access-log line per request.
import type { Request, Response } from 'express';
import type { Logger } from '../logger';
import { newId } from '../ids';

const VALID_REQUEST_ID = /^req_[A-Za-z0-9_-]{8,64}$/;

export function requestContext(logger: Logger) {
  // The level is fixed when the logger is made (logger.ts): asked once, not on every request.
  const accessLog = logger.isInfoEnabled();
  return (req: Request, res: Response): void => {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && VALID_REQUEST_ID.test(incoming) ? incoming : newId('req');
    res.locals.requestId = requestId;
    // Express derives req.ip (trust proxy, X-Forwarded-For) anew on every read: once here.
    res.locals.ip = req.ip ?? req.socket.remoteAddress ?? '';
    res.setHeader('X-Request-Id', requestId);
    // Sessions, credentials and operator data are never kept by a cache: every answer under
    // /v1/auth/ and /ops/, errors too. Set here, before anything can answer (the per-IP ceiling
    // refuses before the router matches a route); two prefix compares, no allocation.
    const url = req.url;
    if (url.startsWith('/v1/auth/') || url.startsWith('/ops/')) res.setHeader('Cache-Control', 'no-store');
    // No listener at all when the access log is off.
    if (accessLog) {
      const start = process.hrtime.bigint();
      res.on('finish', () => {
        logger.info('request', {
          request_id: requestId,
          method: req.method,
          route: res.locals.route ?? null,
          operation_id: res.locals.operationId ?? null,
          status: res.statusCode,
          duration_ms: Math.round(Number(process.hrtime.bigint() - start) / 1e4) / 100,
          ip: res.locals.ip,
        });
      });
    }
  };
}
