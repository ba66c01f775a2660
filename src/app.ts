// The HTTP application: request context, security headers, CORS (preflights answered here) and
// the per-IP ceiling, then compression, the contract router (which reads a body only for an
// operation that takes one), then the errors.
//
// Express gives the request and response their methods (req.ip with `trust proxy`, res.send…);
// its router is not used. With one middleware and one error handler it would only add its own
// work to every request: a closure for `next` and its layer matching, ~8 KB allocated per request
// (`npm run bench:allocations`), whose garbage collection is most of what separates our CPU per
// request from a bare Express server's (README "Performance").
import http from 'node:http';
import express, { type Request, type Response } from 'express';
import type { AppContext } from './app-context';
import { requestContext } from './http/request-context';
import { apiSecurityHeaders } from './http/security-headers';
import { createRouter } from './http/router';
import { errorHandler } from './http/errors';
import { problems } from './http/problem';
import { ipCeiling } from './ratelimit/ip-ceiling';
import { cors } from './http/cors';
import { compress } from './http/compression';
import { handlers } from '../handlers';

const noNext = () => undefined;

export function createApp(app: AppContext): http.RequestListener {
  const server = express();
  server.disable('x-powered-by');
  server.set('trust proxy', app.config.trustProxy);
  server.set('etag', false);
  const context = requestContext(app.logger);
  const ceiling = ipCeiling(app);
  const crossOrigin = cors(app.config, app.contract);
  const compression = compress();
  const router = createRouter(app, handlers);
  const onError = errorHandler(app.logger, app.dependencies);

  return (incoming, outgoing) => {
    // What Express's app.handle does before its router: the prototypes that carry its methods
    // (and `req.app`, which they read the settings from), the circular references, res.locals.
    const req = Object.setPrototypeOf(incoming, server.request) as Request;
    const res = Object.setPrototypeOf(outgoing, server.response) as Response;
    req.res = res;
    res.req = req;
    res.locals = Object.create(null);
    // Every middleware ends in the router, which answers or passes an error: nothing falls through.
    const done = (err?: unknown) => onError(err ?? problems.notFound(), req, res, noNext);
    try {
      context(req, res);
      apiSecurityHeaders(res);
      if (crossOrigin(req, res)) return;
      ceiling(req, res, (err?: unknown) => {
        if (err) return done(err);
        compression(req, res, (err?: unknown) => (err ? done(err) : router(req, res, done)));
      });
    } catch (err) {
      done(err);
    }
  };
}
