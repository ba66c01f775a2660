// Routes every request through the contract: match the operation, authenticate as its security
// requirements say, parse and validate the request (openapi-backend's validators: ajv, draft
// 2020-12), then call the operation's handler.
//
// openapi-backend resolves the document and compiles the validators; the per-request steps are
// ours. Its handleRequest parsed each request three times and matched it against a rebuilt list
// of every operation: two thirds of the CPU of a request to GET /v1/ping. Here the routes are
// compiled once, and a request is parsed and validated only when its operation takes parameters
// or a body.
import type { NextFunction, Request, Response } from 'express';
import express from 'express';
import OpenAPIBackend, { type Operation } from 'openapi-backend';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { AppContext } from '../app-context';
import { compilePathMatcher, routingDocument, type OperationInfo } from '../contract';
import { problems } from './problem';
import { defineErrors } from '../errors';
import { authenticateBearer, authenticateCookie, checkCsrf, unauthenticatedDetail, type AuthResult } from './authenticate';
import type { HandlerContext, HandlerMap } from '../../handlers/types';
import type { Caller } from '../sessions/store';
import type { LimitReport } from '../ratelimit/report';
import { reportsLimits, servicesReportingLimits, setRateLimitHeaders } from './rate-limit-headers';
import { refreshSessionCookie } from './session-cookie';
import { writeReply } from './reply';
import { toValidationIssues } from './validation-issues';

/** Tags whose operations never touch the database, so they answer while it is unavailable. */
const DEPENDENCY_FREE_TAGS = new Set(['example', 'system']);
const BODY_LIMIT = '1mb';

const routerErrors = defineErrors('http', {
  unsupportedMediaType: { code: 'unsupported_media_type', status: 415, detail: 'The operation does not take a body of this media type.' },
});

/**
 * One parser per media type an operation may declare. The router picks it from the request's
 * Content-Type after checking the operation declares that type, so each parses whatever it is given.
 */
const PARSERS: Record<string, express.RequestHandler> = {
  'application/json': express.json({ limit: BODY_LIMIT, type: () => true }),
  'application/x-www-form-urlencoded': express.urlencoded({ limit: BODY_LIMIT, extended: false, type: () => true }),
};

type SchemeName = 'bearerAuth' | 'sessionCookie';
const AUTHENTICATORS: Record<SchemeName, (app: AppContext, req: Request) => Promise<AuthResult>> = {
  bearerAuth: authenticateBearer,
  sessionCookie: authenticateCookie,
};

const MAINTENANCE_DETAIL = 'The service is in maintenance: changes are paused for now; reading still works. Try again later.';
const MAINTENANCE_RETRY_AFTER_SECONDS = 60;

interface Route {
  info: OperationInfo;
  operation: Operation;
  handler: (ctx: HandlerContext<any>) => any;
  /** Every scheme named by the requirements, bearer first (it wins when a request carries both). */
  schemes: SchemeName[];
  dependencyFree: boolean;
  /** A /v1 write: refused while the runtime setting `maintenance_mode` is on (/ops stays usable to turn it off). */
  maintenanceGated: boolean;
  operatorOnly: boolean;
  hasBody: boolean;
  /** Parameters or a body to validate (an operation without either is not validated at all). */
  hasInputs: boolean;
  /** Without declared query parameters the query string is ignored, not refused name by name. */
  takesQuery: boolean;
  /** A body and no parameters (sign-in, register…): validated without openapi-backend parsing the request. */
  bodyOnly: boolean;
  validators: ValidateFunction[];
  /** Body parser by declared media type (lower case, without parameters). */
  parsers: Map<string, express.RequestHandler>;
  /** The 415 detail and `Accept` value naming the declared media types. */
  unsupportedMediaType: { detail: string; accept: string };
  /** Query lists written `a,b` (style form, explode false), which operators also repeat. */
  commaLists: string[];
  /** Its answers carry RateLimit headers (the contract says so on its success responses). */
  reportsLimits: boolean;
}

/** A path of the contract: its operations by HTTP method (upper case, as Node gives it) and its `Allow`. */
interface PathEntry {
  routes: Map<string, Route>;
  allow: string[];
}

export function createRouter(app: AppContext, handlers: HandlerMap) {
  const api = new OpenAPIBackend({
    definition: routingDocument(app.contract) as any,
    // quick: skip openapi-backend's own 3.0-only document check (we lint the 3.1 contract in CI)
    // and its async $ref parser; validators are compiled below, before the first request.
    quick: true,
    strict: true,
    coerceTypes: true,
    ajvOpts: { allErrors: true, strict: false },
    // One Ajv (draft 2020-12, with formats) per option set, shared by every validator:
    // openapi-backend would otherwise build a fresh instance per operation (seconds at start-up).
    customizeAjv: (_ajv, ajvOpts) => sharedAjv(ajvOpts) as any,
  });
  api.init();

  // The validators are compiled here: a broken schema fails start-up, not the first request.
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
      hasBody: Boolean(operation.requestBody),
      hasInputs: Boolean(operation.requestBody) || (operation.parameters ?? []).length > 0,
      takesQuery: (operation.parameters ?? []).some((p) => 'in' in p && p.in === 'query'),
      commaLists: (operation.parameters ?? [])
        .filter((p) => 'in' in p && p.in === 'query' && p.explode === false && (p.schema as { type?: unknown } | undefined)?.type === 'array')
        .map((p) => (p as { name: string }).name),
      bodyOnly: Boolean(operation.requestBody) && !(operation.parameters ?? []).length,
      validators: api.validator.getRequestValidatorsForOperation(info.operationId) as ValidateFunction[],
      parsers: new Map(info.requestMediaTypes.map((type) => [type, parserFor(type, info.operationId)])),
      unsupportedMediaType: {
        detail: `This operation takes a body of type ${info.requestMediaTypes.join(' or ')} (Content-Type).`,
        accept: info.requestMediaTypes.join(', '),
      },
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
      if (route.bodyOnly) {
        const errors = validateBodyOnly(route, req);
        if (errors.length) throw problems.validation(toValidationIssues(errors));
      } else if (route.hasInputs) {
        const request = { method: req.method, path: req.path, body: req.body, query: query as any, headers: req.headers as any };
        const validation = api.validator.validateRequest(request, route.operation);
        if (validation.errors) throw problems.validation(toValidationIssues(validation.errors));
        params = (validation.coerced?.params as Record<string, unknown> | undefined) ?? params;
        query = (validation.coerced?.query as Record<string, unknown> | undefined) ?? query;
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
 * `state=a,b&state=c` as `state=a,b,c`: the contract's lists are comma-separated, and repeated
 * parameters (Express gives an array) are read the same way, mixed or not.
 */
function joinRepeatedLists(query: Record<string, unknown>, names: string[]): Record<string, unknown> {
  let joined = query;
  for (const name of names) {
    const value = query[name];
    if (!Array.isArray(value)) continue;
    if (joined === query) joined = { ...query };
    joined[name] = value.join(',');
  }
  return joined;
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

/**
 * What openapi-backend's validateRequest does for an operation without parameters: the body (when
 * one was sent as an object or as JSON) through the compiled validators, without parsing the
 * request again.
 */
function validateBodyOnly(route: Route, req: Request): ErrorObject[] {
  const input: Record<string, unknown> = { path: {}, query: {}, header: req.headers, cookie: {} };
  const contentType = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (typeof req.body === 'object' || contentType === 'application/json') input.requestBody = req.body;
  const errors: ErrorObject[] = [];
  for (const validate of route.validators) if (!validate(input)) errors.push(...(validate.errors ?? []));
  return errors;
}

/** Every operation of the contract has its handler: a missing one fails start-up, not a request. */
function handlerFor(handlers: HandlerMap, operationId: string): Route['handler'] {
  const handler = handlers[operationId as keyof HandlerMap] as Route['handler'] | undefined;
  if (!handler) throw new Error(`${operationId} is in the contract but has no handler (handlers/index.ts)`);
  return handler;
}

function parserFor(type: string, operationId: string): express.RequestHandler {
  const parser = PARSERS[type];
  if (!parser) throw new Error(`${operationId} declares a request body of type ${type}, which the router cannot parse`);
  return parser;
}

/**
 * Reads the body with the parser of its media type (parameters such as charset aside), or answers
 * 415 when the operation does not declare that type. A request without a body (no
 * Content-Length above 0, no Transfer-Encoding) is left to validation (422 when one is required).
 */
async function readBody(route: Route, req: Request, res: Response): Promise<void> {
  const headers = req.headers;
  if (headers['transfer-encoding'] === undefined && !(Number(headers['content-length']) > 0)) return;
  const raw = headers['content-type'];
  // The common case, `application/json` exactly, without normalising the header.
  const parser = (raw !== undefined && route.parsers.get(raw)) || route.parsers.get(mediaTypeOf(raw));
  if (!parser) {
    const { detail, accept } = route.unsupportedMediaType;
    throw routerErrors.unsupportedMediaType(detail, { headers: { Accept: accept } });
  }
  await runParser(parser, req, res);
}

const mediaTypeOf = (contentType: string | undefined) => (contentType ?? '').split(';')[0]!.trim().toLowerCase();

function runParser(parser: express.RequestHandler, req: Request, res: Response): Promise<void> {
  return new Promise((resolve, reject) => parser(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
}

const ajvInstances = new Map<string, Ajv2020>();

function sharedAjv(opts: object): Ajv2020 {
  const key = JSON.stringify(opts);
  let ajv = ajvInstances.get(key);
  if (!ajv) {
    ajv = new Ajv2020({ ...opts, allErrors: true, strict: false });
    addFormats(ajv);
    ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && Math.abs(n) <= 2 ** 31 });
    ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
    ajvInstances.set(key, ajv);
  }
  return ajv;
}
