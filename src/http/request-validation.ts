// Validates a request's parameters and body against its operation with openapi-backend's
// validators (ajv, draft 2020-12). openapi-backend resolves the document and compiles the
// validators; when they run is ours: only for an operation that takes parameters or a body, and
// without openapi-backend parsing the request again when a body is all it takes.
import type { Request } from 'express';
import OpenAPIBackend, { type Operation, type Options } from 'openapi-backend';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type Ajv from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { escapeRegex, routingDocument, type Contract } from '../contract';
import { problems } from './problem';
import { toValidationIssues } from './validation-issues';

/** openapi-backend over the contract, its validators sharing one Ajv. */
export function validatingBackend(contract: Contract): OpenAPIBackend {
  const api = new OpenAPIBackend({
    definition: routingDocument(contract) as Options['definition'],
    // quick: skip openapi-backend's own 3.0-only document check (we lint the 3.1 contract in CI)
    // and its async $ref parser; validators are compiled by inputsOf, before the first request.
    quick: true,
    strict: true,
    coerceTypes: true,
    ajvOpts: { allErrors: true, strict: false },
    // One Ajv (draft 2020-12, with formats) per option set, shared by every validator:
    // openapi-backend would otherwise build a fresh instance per operation (seconds at start-up).
    // Its type names the draft-07 Ajv, a sibling class with the same methods.
    customizeAjv: (_ajv, ajvOpts) => sharedAjv(ajvOpts) as unknown as Ajv,
  });
  api.init();
  return api;
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

/** What validation reads of a route, compiled once by inputsOf. */
export interface ValidatedRoute {
  operation: Operation;
  hasBody: boolean;
  /** Parameters or a body to validate (an operation without either is not validated at all). */
  hasInputs: boolean;
  /** Without declared query parameters the query string is ignored, not refused name by name. */
  takesQuery: boolean;
  /** Query lists written `a,b` (style form, explode false), which operators also repeat. */
  commaLists: string[];
  /** The path's parameters, decoded, by name (the path matched the route's template already). */
  pathParams: ((path: string) => Record<string, string>) | null;
  validators: ValidateFunction[];
}

/** Compiles the operation's validators: a broken schema fails start-up, not the first request. */
export function inputsOf(api: OpenAPIBackend, operation: Operation): Omit<ValidatedRoute, 'operation'> {
  const parameters = (operation.parameters ?? []) as { in?: string; name: string; explode?: boolean; schema?: { type?: unknown } }[];
  return {
    hasBody: Boolean(operation.requestBody),
    hasInputs: Boolean(operation.requestBody) || parameters.length > 0,
    takesQuery: parameters.some((p) => p.in === 'query'),
    commaLists: parameters.filter((p) => p.in === 'query' && p.explode === false && p.schema?.type === 'array').map((p) => p.name),
    pathParams: parameters.some((p) => p.in === 'path') ? compilePathParams(operation.path) : null,
    validators: api.validator.getRequestValidatorsForOperation(operation.operationId!) as ValidateFunction[],
  };
}

/**
 * `/v1/orgs/{orgId}` → a function from a matching path to `{ orgId }`, each value
 * percent-decoded (as openapi-backend's parser did); a malformed escape answers 422 naming the
 * parameter.
 */
function compilePathParams(template: string): (path: string) => Record<string, string> {
  const names: string[] = [];
  const source = template.split('/').map((segment) =>
    segment
      .split(/(\{[^}]+\})/)
      .map((part) => (part.startsWith('{') ? (names.push(part.slice(1, -1)), '([^/]+)') : escapeRegex(part)))
      .join(''),
  );
  const regex = new RegExp(`^${source.join('/')}/*$`);
  return (path) => {
    const values = regex.exec(path);
    const params: Record<string, string> = {};
    names.forEach((name, i) => {
      const raw = values?.[i + 1] ?? '';
      try {
        params[name] = decodeURIComponent(raw);
      } catch {
        throw problems.validation([{ message: 'is not valid percent-encoding', location: `path.${name}` }]);
      }
    });
    return params;
  };
}

/**
 * `state=a,b&state=c` as `state=a,b,c`: the contract's lists are comma-separated, and repeated
 * parameters (Express gives an array) are read the same way, mixed or not.
 */
export function joinRepeatedLists(query: Record<string, unknown>, names: string[]): Record<string, unknown> {
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
 * The request's parameters and body through the operation's compiled validators, as
 * openapi-backend's validateRequest ran them, without its parseRequest (which lowercased every
 * header, re-parsed cookies and the query, and compiled the path template again on every
 * request): the route is matched already, Node gives headers in lower case, and no operation
 * takes a cookie parameter. The validators coerce path and query values to their schema's types
 * in place; those are returned.
 */
export function validateRequest(route: ValidatedRoute, req: Request, query: Record<string, unknown>): { params: Record<string, unknown>; query: Record<string, unknown> } {
  const input: Record<string, unknown> = {
    path: route.pathParams ? route.pathParams(req.path) : {},
    query: route.commaLists.length ? splitCommaLists(query, route.commaLists) : { ...query },
    header: req.headers,
    cookie: {},
  };
  if (route.hasBody) {
    const contentType = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (typeof req.body === 'object' || contentType === 'application/json') input.requestBody = req.body;
  }
  const errors: ErrorObject[] = [];
  for (const validate of route.validators) if (!validate(input)) errors.push(...(validate.errors ?? []));
  if (errors.length) throw problems.validation(toValidationIssues(errors));
  return { params: input.path as Record<string, unknown>, query: input.query as Record<string, unknown> };
}

/** `a,b` as ['a', 'b'] for the comma lists (an empty value stays as it is, for the schema to judge). */
function splitCommaLists(query: Record<string, unknown>, names: string[]): Record<string, unknown> {
  const split = { ...query };
  for (const name of names) {
    const value = split[name];
    if (typeof value === 'string' && value) split[name] = value.split(',');
  }
  return split;
}
