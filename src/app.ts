// The Express application: request context, security headers, CORS (preflights answered here)
// and the per-IP ceiling, then compression, the contract router (which reads a body only for an
// operation that takes one), then the errors.
import express from 'express';
import type { AppContext } from './app-context';
import { requestContext } from './http/request-context';
import { apiSecurityHeaders } from './http/security-headers';
import { createRouter } from './http/router';
import { errorHandler } from './http/errors';
import { ipCeiling } from './ratelimit/ip-ceiling';
import { cors } from './http/cors';
import { compress } from './http/compression';
import { handlers } from '../handlers';

export function createApp(app: AppContext): express.Express {
  const server = express();
  server.disable('x-powered-by');
  server.set('trust proxy', app.config.trustProxy);
  server.set('etag', false);
  const context = requestContext(app.logger);
  const ceiling = ipCeiling(app);
  const crossOrigin = cors(app.config, app.contract);
  const compression = compress();
  const router = createRouter(app, handlers);
  // One middleware for them all: each layer of Express's router costs a little on every request.
  server.use((req, res, next) => {
    context(req, res);
    apiSecurityHeaders(res);
    if (crossOrigin(req, res)) return;
    ceiling(req, res, (err?: unknown) => {
      if (err) return next(err);
      compression(req, res, (err?: unknown) => (err ? next(err) : router(req, res, next)));
    });
  });
  server.use(errorHandler(app.logger, app.dependencies));
  return server;
}
