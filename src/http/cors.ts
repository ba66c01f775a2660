// CORS for the browser apps on the configured app origins (APP_ORIGINS), with credentials (the
// session cookie). Any other origin gets no CORS header at all, so a browser keeps its pages from
// reading our answers; its preflight is not answered here and falls through to the router (405
// or 404), which a browser takes as a refusal. Cookie writes are still checked against the same
// origins by the CSRF check (authenticate.ts): CORS decides what a page may read, not what the
// server accepts.
//
// What a browser may send and read is taken from the contract, so it follows the contract: the
// request headers it declares as parameters, and every response header it documents.
import type { Request, Response } from 'express';
import type { Config } from '../config';
import { resolveRef, type Contract } from '../contract';

/** How long a browser may reuse a preflight answer (Chromium caps it at 2 hours). */
const PREFLIGHT_MAX_AGE_SECONDS = 7200;

/** Read by every operation, though no operation declares them as parameters. */
const ALWAYS_ALLOWED_REQUEST_HEADERS = ['Authorization', 'Content-Type', 'X-Request-Id'];

/**
 * Response headers a page can read without being told (the CORS-safelisted ones), and Set-Cookie,
 * which a page can never read.
 */
const NOT_EXPOSED = new Set(['cache-control', 'content-language', 'content-length', 'content-type', 'expires', 'last-modified', 'pragma', 'set-cookie']);

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/**
 * The CORS step of every request: sets `Vary: Origin` (the answer depends on it), the CORS headers
 * for an allowed origin, and answers an allowed origin's preflight (204). Returns true when the
 * request was answered.
 */
export function cors(config: Pick<Config, 'appOrigins'>, contract: Contract) {
  const origins = new Set(config.appOrigins);
  const allowHeaders = requestHeaders(contract).join(', ');
  const exposeHeaders = responseHeaders(contract).join(', ');
  const allowMethods = new Map([...contract.allowByPath].map(([path, methods]) => [path, methods.join(', ')]));

  return (req: Request, res: Response): boolean => {
    res.setHeader('Vary', 'Origin');
    const origin = req.headers.origin;
    if (origin === undefined || !origins.has(origin)) return false;
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      const template = contract.matchPath(req.path);
      // An unknown path is the router's to answer (404), as for any request.
      if (template === undefined) return false;
      res.setHeader('Access-Control-Allow-Methods', allowMethods.get(template)!);
      res.setHeader('Access-Control-Allow-Headers', allowHeaders);
      res.setHeader('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_SECONDS));
      res.statusCode = 204;
      res.end();
      return true;
    }
    res.setHeader('Access-Control-Expose-Headers', exposeHeaders);
    return false;
  };
}

/** The request headers the contract declares as parameters, beside those every operation reads. */
function requestHeaders(contract: Contract): string[] {
  const names = new Map(ALWAYS_ALLOWED_REQUEST_HEADERS.map((n) => [n.toLowerCase(), n]));
  for (const op of operations(contract)) {
    for (const p of op.parameters ?? []) {
      const param = resolveRef(contract.document, p);
      if (param?.in === 'header' && !names.has(String(param.name).toLowerCase())) names.set(String(param.name).toLowerCase(), String(param.name));
    }
  }
  return [...names.values()];
}

/** Every response header the contract documents, but those a page may read anyway (or never). */
function responseHeaders(contract: Contract): string[] {
  const names = new Map<string, string>();
  const add = (response: unknown) => {
    for (const name of Object.keys(resolveRef(contract.document, response)?.headers ?? {})) {
      if (!NOT_EXPOSED.has(name.toLowerCase()) && !names.has(name.toLowerCase())) names.set(name.toLowerCase(), name);
    }
  };
  for (const op of operations(contract)) for (const response of Object.values(op.responses ?? {})) add(response);
  for (const response of Object.values(contract.document.components?.responses ?? {})) add(response);
  return [...names.values()].sort();
}

/** What this file reads of an operation of the (untyped) OpenAPI document. */
interface OperationObject {
  parameters?: unknown[];
  responses?: Record<string, unknown>;
}

function* operations(contract: Contract): Generator<OperationObject> {
  for (const item of Object.values<Record<string, OperationObject | undefined>>(contract.document.paths ?? {})) {
    for (const method of METHODS) if (item[method]) yield item[method];
  }
}
