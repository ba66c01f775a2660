// Routes every request through the contract: match the operation (route-matching.ts),
// authenticate as its security requirements say (security-requirements.ts), read the body
// (request-body.ts) and validate the request (request-validation.ts), then call the operation's
// handler and write its reply (reply.ts) — with an Idempotency-Key, on an operation that takes
// one, inside the transaction that records or replays its answer (idempotent-call.ts).
//
// openapi-backend resolves the document and compiles the validators; the per-request steps are
// ours. Its handleRequest parsed each request three times and matched it against a rebuilt list
// of every operation: two thirds of the CPU of a request to GET /v1/ping. Here the routes are
// compiled once, and a request is parsed and validated only when its operation takes parameters
// or a body.
import type { NextFunction, Request, Response } from 'express';
import type { AppContext } from '../app-context';
import { problems } from './problem';
import type { HandlerContext, HandlerMap } from './handler-types';
import type { LimitReport } from '../ratelimit/report';
import { reportsLimits, servicesReportingLimits, setRateLimitHeaders } from './rate-limit-headers';
import { refreshSessionCookie } from './session-cookie';
import { compileMatcher } from './route-matching';
import { authenticate, securityOf, type SecuredRoute } from './security-requirements';
import { bodyParsersOf, readBody, type BodyRoute } from './request-body';
import { inputsOf, joinRepeatedLists, validateRequest, validatingBackend, type ValidatedRoute } from './request-validation';
import { writeReply, writeSerialised } from './reply';
import { acceptsIdempotencyKey, callWithKey, IDEMPOTENCY_KEY } from './idempotent-call';

/** Tags whose operations never touch the database, so they answer while it is unavailable. */
const DEPENDENCY_FREE_TAGS = new Set(['example', 'system']);

const MAINTENANCE_DETAIL = 'The service is in maintenance: changes are paused for now; reading still works. Try again later.';
const MAINTENANCE_RETRY_AFTER_SECONDS = 60;

interface Route extends SecuredRoute, BodyRoute, ValidatedRoute {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- one signature for the handlers of every operation; HandlerMap types each against its own.
  handler: (ctx: HandlerContext<any>) => any;
  dependencyFree: boolean;
  /** A /v1 write: refused while the runtime setting `maintenance_mode` is on (/ops stays usable to turn it off). */
  maintenanceGated: boolean;
  /** Its answers carry RateLimit headers (the contract says so on its success responses). */
  reportsLimits: boolean;
  /** It takes an Idempotency-Key (idempotent-call.ts); elsewhere the header is ignored. */
  acceptsKey: boolean;
}

export function createRouter(app: AppContext, handlers: HandlerMap) {
  const api = validatingBackend(app.contract);

  // Everything a request needs of its operation is compiled here, so a broken schema, a missing
  // handler or an unparsable media type fails start-up, not the first request.
  const routes: Route[] = api.router.getOperations().map((operation) => {
    const info = app.contract.operations.get(operation.operationId!)!;
    return {
      info,
      operation,
      handler: handlerFor(handlers, info.operationId),
      ...securityOf(info),
      dependencyFree: info.tags.some((t) => DEPENDENCY_FREE_TAGS.has(t)),
      maintenanceGated: info.path.startsWith('/v1/') && !['get', 'head'].includes(operation.method.toLowerCase()),
      ...inputsOf(api, operation),
      ...bodyParsersOf(info),
      reportsLimits: reportsLimits(app.contract, info),
      acceptsKey: acceptsIdempotencyKey(app.contract, info),
    };
  });
  const match = compileMatcher(app.contract, routes);

  return async (req: Request, res: Response, next: NextFunction) => {
    let limitReport: LimitReport | undefined;
    try {
      const route = match(req.method, req.path);
      res.locals.operationId = route.info.operationId;
      res.locals.route = route.info.path;
      if (!app.state.databaseReady && !route.dependencyFree) throw problems.unavailable('The database is not ready yet. Try again shortly.');
      if (route.maintenanceGated && app.runtimeSettings.get('maintenance_mode')) throw problems.unavailable(MAINTENANCE_DETAIL, MAINTENANCE_RETRY_AFTER_SECONDS);
      const caller = route.schemes.length ? await authenticate(app, route, req) : null;
      res.locals.caller = caller;
      if (caller) refreshSessionCookie(app.config, req, res, caller, app.now());
      // After the caller is known: a body is read only for an operation that takes one, and only
      // in a media type the operation declares.
      if (route.hasBody) await readBody(route, req, res);
      let params: Record<string, unknown> = {};
      let query: Record<string, unknown> = route.takesQuery ? joinRepeatedLists(req.query, route.commaLists) : {};
      // The contract refuses what the handlers must not see, NUL characters included (PostgreSQL
      // text cannot hold them): every request string has a pattern saying so (test/contract/rules).
      if (route.hasInputs) ({ params, query } = validateRequest(route, req, query));
      const scope = route.reportsLimits ? servicesReportingLimits(app) : null;
      limitReport = scope?.report;
      const ctx = {
        app,
        body: req.body,
        params,
        query,
        caller,
        services: scope?.services ?? app.services,
        meta: { requestId: res.locals.requestId, ip: res.locals.ip, userAgent: req.headers['user-agent'] ?? null },
        req,
        res,
      };
      const key = route.acceptsKey ? req.headers[IDEMPOTENCY_KEY] : undefined;
      // Every operation that takes a key is protected: the caller is there to scope it to.
      if (key === undefined || !caller) {
        const reply = await route.handler(ctx);
        setRateLimitHeaders(res, limitReport);
        writeReply(res, reply);
      } else {
        const { answer, replayed } = await callWithKey(app, route.info, route.handler, { ...ctx, caller }, key);
        // A replay counted no limit: it carries no RateLimit headers.
        setRateLimitHeaders(res, limitReport);
        writeSerialised(res, answer, replayed ? { 'Idempotent-Replayed': 'true' } : {});
      }
    } catch (err) {
      setRateLimitHeaders(res, limitReport);
      next(err);
    }
  };
}

/** Every operation of the contract has its handler: a missing one fails start-up, not a request. */
function handlerFor(handlers: HandlerMap, operationId: string): Route['handler'] {
  const handler = handlers[operationId as keyof HandlerMap] as Route['handler'] | undefined;
  if (!handler) throw new Error(`${operationId} is in the contract but has no handler (handlers/index.ts)`);
  return handler;
}
