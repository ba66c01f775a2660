// The Express application: the middleware chain around the contract router.
import express from 'express';
import cookieParser from 'cookie-parser';
import type { AppContext } from './app-context';
import { requestContext } from './http/request-context';
import { apiSecurityHeaders } from './http/security-headers';
import { createRouter } from './http/router';
import { errorHandler } from './http/errors';
import { ipCeiling } from './ratelimit/ip-ceiling';
import { handlers } from '../handlers';

export const BODY_LIMIT = '1mb';

export function createApp(app: AppContext): express.Express {
  const server = express();
  server.disable('x-powered-by');
  server.set('trust proxy', app.config.trustProxy);
  server.set('etag', false);
  server.use(requestContext(app.logger));
  server.use(apiSecurityHeaders);
  // Before body parsing: a client over the per-IP ceiling costs one Redis round trip, nothing more.
  server.use(ipCeiling(app));
  server.use(express.json({ limit: BODY_LIMIT, type: ['application/json', 'application/*+json'] }));
  server.use(express.urlencoded({ limit: BODY_LIMIT, extended: false }));
  server.use(cookieParser());
  server.use(createRouter(app, handlers));
  server.use(errorHandler(app.logger));
  return server;
}
