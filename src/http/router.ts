// Routes every request through the contract: match the operation, authenticate as its security
// requirements say, read the body (request-body.ts) and validate the request
// (request-validation.ts), then call the operation's handler and write its reply (reply.ts).
//
// openapi-backend resolves the document and compiles the validators; the per-request steps are
// ours. Its handleRequest parsed each request three times and matched it against a rebuilt list
// of every operation: two thirds of the CPU of a request to GET /v1/ping. Here the routes are
// compiled once, and a request is parsed and validated only when its operation takes parameters
// or a body.
import type { NextFunction, Request, Response } from 'express';
import type { AppContext } from '../app-context';
import { compilePathMatcher, type OperationInfo } from '../contract';
import { problems } from './problem';
import { authenticateBearer, authenticateCookie, checkCsrf, unauthenticatedDetail, type AuthResult } from './authenticate';
import type { HandlerContext, HandlerMap } from '../../handlers/types';
import type { Caller } from '../sessions/store';
import type { LimitReport } from '../ratelimit/report';
import { reportsLimits, servicesReportingLimits, setRateLimitHeaders } from './rate-limit-headers';
import { refreshSessionCookie } from './session-cookie';
import { bodyParsersOf, readBody, type BodyRoute } from './request-body';
import { inputsOf, joinRepeatedLists, validateBodyOnly, validateRequest, validatingBackend, type ValidatedRoute } from './request-validation';
import { writeReply } from './reply';

/** Tags whose operations never touch the database, so they answer while it is unavailable. */
const DEPENDENCY_FREE_TAGS = new Set(['example', 'system']);

type SchemeName = 'bearerAuth' | 'sessionCookie';
const AUTHENTICATORS: Record<SchemeName, (app: AppContext, req: Request) => Promise<AuthResult>> = {
  bearerAuth: authenticateBearer,
  sessionCookie: authenticateCookie,
};

const MAINTENANCE_DETAIL = 'The service is in maintenance: changes are paused for now; reading still works. Try again later.';
const MAINTENANCE_RETRY_AFTER_SECONDS = 60;

interface Route extends BodyRoute, ValidatedRoute {
  info: OperationInfo;
  // any: one signature for the handlers of every operation; HandlerMap types each against its own.
  handler: (ctx: HandlerContext<any>) => any;
  /** Every scheme named by the requirements, bearer first (it wins when a request carries both). */
  schemes: SchemeName[];
  dependencyFree: boolean;
  /** A /v1 write: refused while the runtime setting `maintenance_mode` is on (/ops stays usable to turn it off). */
  maintenanceGated: boolean;
  operatorOnly: boolean;
  /** Its answers carry RateLimit headers (the contract says so on its success responses). */
  reportsLimits: boolean;
}

/** A path of the contract: its operations by HTTP method (upper case, as Node gives it) and its `Allow`. */
interface PathEntry {
  routes: Map<string, Route>;
  allow: string[];
}

export function createRouter(app: AppContext, handlers: HandlerMap) {
  const api = validatingBackend(app.contract);

  // Everything a request needs of its operation is compiled here, so a broken schema, a missing
  // handler or an unparsable media type fails start-up, not the first request.
  const routes: Route[] = api.router.getOperations().map((operation) => {
    const info = app.contract.operations.get(operation.operationId!)!;
    const named = new Set(info.security.flatMap((r) => Object.keys(r)));
    return {
      info,
      operation,
      handler: handlerFor(handlers, info.operationId),
      schemes: (['bearerAuth', 'sessionCookie'] as const).filter((s) => named.has(s)),
      dependencyFree: info.tags.some((t) => DEPENDENCY_FREE_TAGS.has(t)),
      maintenanceGated: info.path.startsWith('/v1/') && !['get', 'head'].includes(operation.method.toLowerCase()),
      operatorOnly: info.roles.includes('operator'),
      ...inputsOf(api, operation),
      ...bodyParsersOf(info),
      reportsLimits: reportsLimits(app.contract, info),
    };
  });
  const match = compileMatcher(routes);

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
      if (route.bodyOnly) validateBodyOnly(route, req);
      else if (route.hasInputs) {
        const coerced = validateRequest(api, route, req, query);
        params = (coerced?.params as Record<string, unknown> | undefined) ?? params;
        query = (coerced?.query as Record<string, unknown> | undefined) ?? query;
      }
      const scope = route.reportsLimits ? servicesReportingLimits(app) : null;
      limitReport = scope?.report;
      const reply = await route.handler({
        app,
        body: req.body,
        params,
        query,
        caller,
        services: scope?.services ?? app.services,
        meta: { requestId: res.locals.requestId, ip: res.locals.ip, userAgent: req.headers['user-agent'] ?? null },
        req,
        res,
      });
      setRateLimitHeaders(res, limitReport);
      writeReply(res, reply);
    } catch (err) {
      setRateLimitHeaders(res, limitReport);
      next(err);
    }
  };

  /** The most specific path (exact paths first, see compilePathMatcher), then the method: 404, or 405 with Allow. */
  function compileMatcher(all: Route[]) {
    const paths = new Map<string, PathEntry>();
    for (const route of all) {
      const path = route.info.path;
      let entry = paths.get(path);
      if (!entry) paths.set(path, (entry = { routes: new Map(), allow: app.contract.allowByPath.get(path) ?? [] }));
      entry.routes.set(route.info.method.toUpperCase(), route);
    }
    // HEAD answers as GET does (RFC 9110 9.3.2) where the path allows it; Node sends the headers
    // and drops the body.
    for (const entry of paths.values()) {
      const get = entry.routes.get('GET');
      if (get && entry.allow.includes('HEAD') && !entry.routes.has('HEAD')) entry.routes.set('HEAD', get);
    }
    const matchPath = compilePathMatcher(paths);
    return (method: string, path: string): Route => {
      const entry = matchPath(path);
      if (!entry) throw problems.notFound('No such path.');
      const route = entry.routes.get(method);
      if (!route) throw problems.methodNotAllowed(entry.allow);
      return route;
    };
  }
}

/**
 * Runs the operation's security schemes (bearer first); the requirements are
 * alternatives, each satisfied when all its schemes found a caller. Then role and CSRF checks.
 * An operation whose requirements include `{}` answers callers and anonymous requests alike.
 */
async function authenticate(app: AppContext, route: Route, req: Request): Promise<Caller | null> {
  // One after the other: a request rarely carries both credentials, and a scheme whose credential
  // is absent answers at once.
  const results: Partial<Record<SchemeName, AuthResult>> = {};
  for (const scheme of route.schemes) results[scheme] = await AUTHENTICATORS[scheme](app, req);
  // A credential that could not be looked up (database down) is neither valid nor invalid: the
  // request fails (503), never 401, which would tell a client its session is gone.
  for (const scheme of route.schemes) {
    const result = results[scheme];
    if (result && 'error' in result) throw result.error;
  }
  const found = (r: AuthResult | undefined): r is { caller: Caller } => Boolean(r && 'caller' in r);
  const authorized = route.info.security.some((requirement) => Object.keys(requirement).every((scheme) => found(results[scheme as SchemeName])));
  const caller = route.schemes.map((scheme) => results[scheme]).find(found)?.caller ?? null;
  if (caller) {
    if (route.operatorOnly && !caller.operator) throw problems.forbidden('Only operators may use /ops.');
    if (caller.transport === 'cookie') checkCsrf(app.config, req);
  }
  if (!authorized && route.info.security.length) throw problems.unauthenticated(unauthenticatedDetail(app, req, route.schemes.includes('sessionCookie')));
  return caller;
}

/** Every operation of the contract has its handler: a missing one fails start-up, not a request. */
function handlerFor(handlers: HandlerMap, operationId: string): Route['handler'] {
  const handler = handlers[operationId as keyof HandlerMap] as Route['handler'] | undefined;
  if (!handler) throw new Error(`${operationId} is in the contract but has no handler (handlers/index.ts)`);
  return handler;
}
