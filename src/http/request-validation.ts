// Validates a request's parameters and body against its operation with openapi-backend's
// validators (ajv, draft 2020-12). openapi-backend resolves the document and compiles the
// validators; when they run is ours: only for an operation that takes parameters or a body, and
// without openapi-backend parsing the request again when a body is all it takes.
import type { Request } from 'express';
import OpenAPIBackend, { type Operation, type Options, type Request as BackendRequest } from 'openapi-backend';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type Ajv from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { routingDocument, type Contract } from '../contract';
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
  /** A body and no parameters (sign-in, register…): validated without openapi-backend parsing the request. */
  bodyOnly: boolean;
  validators: ValidateFunction[];
}

/** Compiles the operation's validators: a broken schema fails start-up, not the first request. */
export function inputsOf(api: OpenAPIBackend, operation: Operation): Omit<ValidatedRoute, 'operation'> {
  const parameters = operation.parameters ?? [];
  return {
    hasBody: Boolean(operation.requestBody),
    hasInputs: Boolean(operation.requestBody) || parameters.length > 0,
    takesQuery: parameters.some((p) => 'in' in p && p.in === 'query'),
    commaLists: parameters
      .filter((p) => 'in' in p && p.in === 'query' && p.explode === false && (p.schema as { type?: unknown } | undefined)?.type === 'array')
      .map((p) => (p as { name: string }).name),
    bodyOnly: Boolean(operation.requestBody) && !parameters.length,
    validators: api.validator.getRequestValidatorsForOperation(operation.operationId!) as ValidateFunction[],
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
 * What openapi-backend's validateRequest does for an operation without parameters: the body (when
 * one was sent as an object or as JSON) through the compiled validators, without parsing the
 * request again.
 */
export function validateBodyOnly(route: ValidatedRoute, req: Request): void {
  const input: Record<string, unknown> = { path: {}, query: {}, header: req.headers, cookie: {} };
  const contentType = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (typeof req.body === 'object' || contentType === 'application/json') input.requestBody = req.body;
  const errors: ErrorObject[] = [];
  for (const validate of route.validators) if (!validate(input)) errors.push(...(validate.errors ?? []));
  if (errors.length) throw problems.validation(toValidationIssues(errors));
}

/** Parameters and body through openapi-backend's validateRequest; returns what it coerced (params, query). */
export function validateRequest(api: OpenAPIBackend, route: ValidatedRoute, req: Request, query: Record<string, unknown>) {
  const request = { method: req.method, path: req.path, body: req.body, query: query as BackendRequest['query'], headers: req.headers as BackendRequest['headers'] };
  const validation = api.validator.validateRequest(request, route.operation);
  if (validation.errors) throw problems.validation(toValidationIssues(validation.errors));
  return validation.coerced;
}
