// Routes every request through the contract: match the operation, authenticate as its security
// requirements say, validate the request (ajv, draft 2020-12), then call the operation's handler.
import type { NextFunction, Request, Response } from 'express';
import OpenAPIBackend, { type Context } from 'openapi-backend';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ErrorObject } from 'ajv';
import type { AppContext } from '../app-context';
import { allowedMethods, routingDocument, type OperationInfo } from './contract';
import { isDependencyDown, problems } from './problem';
import { authenticateBearer, authenticateCookie, checkCsrf, type AuthResult } from './authenticate';
import type { HandlerContext, HandlerMap } from '../../handlers/types';

/** Tags whose operations never touch the database, so they answer while it is unavailable. */
const DEPENDENCY_FREE_TAGS = new Set(['example', 'system']);

interface Args {
  req: Request;
  res: Response;
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

  const operationInfo = (c: Context): OperationInfo => app.contract.operations.get(c.operation.operationId!)!;

  api.register({
    notFound: () => {
      throw problems.notFound('No such path.');
    },
    methodNotAllowed: (c: Context) => {
      throw problems.methodNotAllowed(allowedMethods(app.contract, c.request.path));
    },
    postRoutingHandler: (c: Context, { res }: Args) => {
      if (!c.operation) return;
      const op = operationInfo(c);
      res.locals.operationId = op.operationId;
      res.locals.route = op.path;
      if (!app.state.databaseReady && !op.tags.some((t) => DEPENDENCY_FREE_TAGS.has(t))) {
        throw problems.unavailable('The database is not ready yet. Try again shortly.');
      }
    },
    // After authentication, before validation: role and CSRF checks, for pending operations too.
    postSecurityHandler: (c: Context, { req, res }: Args) => {
      const caller = callerOf(c);
      res.locals.caller = caller;
      if (!caller) return;
      if (operationInfo(c).roles.includes('operator') && !caller.operator) throw problems.forbidden('Only operators may use /ops.');
      if (caller.transport === 'cookie') checkCsrf(app.config, req);
    },
    unauthorizedHandler: (c: Context) => {
      const results = Object.values(c.security ?? {}) as (AuthResult | undefined)[];
      const failure = results.find((r) => r && 'error' in r && isDependencyDown(r.error));
      if (failure && 'error' in failure) throw failure.error;
      throw problems.unauthenticated();
    },
    validationFail: (c: Context) => {
      throw problems.validation(toValidationIssues(c.validation.errors ?? []));
    },
    notImplemented: () => {
      throw problems.notImplemented();
    },
  });

  api.registerSecurityHandler('bearerAuth', (_c: Context, { req }: Args) => authenticateBearer(app, req));
  api.registerSecurityHandler('sessionCookie', (_c: Context, { req }: Args) => authenticateCookie(app, req));

  for (const op of app.contract.operations.values()) {
    const handler = handlers[op.operationId as keyof HandlerMap] as ((ctx: HandlerContext<any>) => any) | undefined;
    if (!handler) continue; // falls through to notImplemented → 501
    api.register(op.operationId, async (c: Context, { req, res }: Args) => {
      const reply = await handler({
        app,
        body: c.request.requestBody,
        params: c.validation?.coerced?.params ?? c.request.params,
        query: c.validation?.coerced?.query ?? c.request.query,
        caller: res.locals.caller ?? null,
        requestId: res.locals.requestId,
        ip: req.ip ?? req.socket.remoteAddress ?? '',
        userAgent: req.get('user-agent') ?? null,
        req,
        res,
      });
      writeReply(res, reply);
    });
  }

  api.init();
  installFastMatcher(api);
  // Compile every request validator now: a broken schema fails start-up, not the first request.
  for (const op of app.contract.operations.values()) api.validator.getRequestValidatorsForOperation(op.operationId);

  return (req: Request, res: Response, next: NextFunction) => {
    api
      .handleRequest({ method: req.method, path: req.path, body: req.body, query: req.query as any, headers: req.headers as any }, { req, res })
      .catch((err: unknown) => next(err));
  };
}

/**
 * openapi-backend rebuilds its operation list (a lodash chain) and a RegExp per operation on every
 * request: a third of the CPU of a request. Same rules, precomputed once: an exact path and method
 * first, then templates, most literal characters first; a path that matches with no such method
 * is a 405.
 */
function installFastMatcher(api: OpenAPIBackend) {
  const router = api.router;
  const operations = router.getOperations();
  router.getOperations = () => operations;
  const exact = new Map<string, (typeof operations)[number]>();
  for (const op of operations) if (!op.path.includes('{')) exact.set(`${op.method} ${op.path}`, op);
  const templates = operations
    .map((op) => ({
      op,
      regex: new RegExp(`^${op.path.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^/]+')}$`),
      literal: op.path.replace(/\{.*?\}/g, '').length,
    }))
    .sort((a, b) => b.literal - a.literal);
  router.matchOperation = ((req: Parameters<typeof router.matchOperation>[0], strict?: boolean) => {
    const normal = router.normalizeRequest(req);
    const path = router.normalizePath(normal.path);
    const hit = exact.get(`${normal.method} ${path}`);
    if (hit) return hit;
    const matching = templates.filter((t) => t.regex.test(path));
    const found = matching.find((t) => t.op.method === normal.method)?.op;
    if (found || !strict) return found;
    throw new Error(matching.length ? '405-methodNotAllowed: this method is not registered for the route' : '404-notFound: no route matches request');
  }) as typeof router.matchOperation;
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

function callerOf(c: Context) {
  const results = c.security ?? {};
  // Bearer wins when a request carries both.
  for (const scheme of ['bearerAuth', 'sessionCookie']) {
    const r = results[scheme] as AuthResult | undefined;
    if (r && 'caller' in r) return r.caller;
  }
  return null;
}

function writeReply(res: Response, reply: { status: number; body?: unknown; headers?: Record<string, string> }) {
  for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
  res.status(reply.status);
  if (reply.body === undefined || reply.status === 204 || reply.status === 302) res.end();
  else if (typeof reply.body === 'string' || Buffer.isBuffer(reply.body)) res.send(reply.body);
  else res.json(reply.body);
}

/** ajv errors → `{message, location}` with locations as DESIGN 1 names them (`body.a.b`, `query.limit`). */
export function toValidationIssues(errors: ErrorObject[]) {
  const seen = new Set<string>();
  const issues: { message: string; location: string }[] = [];
  for (const e of errors) {
    // oneOf/anyOf/if summaries repeat what their branches already said.
    if (['oneOf', 'anyOf', 'if'].includes(e.keyword) && errors.length > 1) continue;
    let location = locationOf(e.instancePath);
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      if (missing === 'requestBody') {
        location = 'body';
        message = 'a JSON request body is required';
      } else {
        location = joinLocation(location, missing);
        message = 'is required';
      }
    } else if (e.keyword === 'additionalProperties') {
      location = joinLocation(location, (e.params as { additionalProperty: string }).additionalProperty);
      message = 'is not allowed';
    } else if (e.keyword === 'parse') {
      location = 'body';
    }
    const key = `${location}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push({ message, location });
  }
  return issues;
}

const ROOTS: Record<string, string> = { requestBody: 'body', path: 'path', query: 'query', header: 'header', cookie: 'cookie' };

function locationOf(instancePath: string): string {
  const [root = '', ...rest] = instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  return rest.reduce(joinLocation, ROOTS[root] ?? (root || 'body'));
}

function joinLocation(base: string, segment: string): string {
  return /^\d+$/.test(segment) ? `${base}[${segment}]` : `${base}.${segment}`;
}

