// Validates every response a test receives against openapi.yaml: the status must be documented
// for the operation, the content type must be one it lists, the body must match its schema and
// documented headers must match theirs. A response the contract does not describe fails the test.
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import type { Response } from 'supertest';
import { loadContract, type Contract } from '../../src/contract';
import { problemCodes } from './problem-codes';

let cached: { contract: Contract; ajv: Ajv2020; validators: Map<string, ValidateFunction> } | undefined;

function state() {
  if (!cached) {
    const contract = loadContract();
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(contract.document, 'openapi');
    cached = { contract, ajv, validators: new Map() };
  }
  return cached;
}

const pointer = (...parts: (string | number)[]) => parts.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

function validatorFor(ref: string): ValidateFunction {
  const s = state();
  let v = s.validators.get(ref);
  if (!v) {
    v = s.ajv.compile({ $ref: `openapi#/${ref}` });
    s.validators.set(ref, v);
  }
  return v;
}

/** The operation's path template, with the router's precedence; null for an unknown path or a wrong method. */
function matchPath(contract: Contract, method: string, urlPath: string): string | null {
  const template = contract.matchPath(urlPath);
  return template && contract.methodsByPath.get(template)!.includes(method.toUpperCase()) ? template : null;
}

export function assertMatchesContract(method: string, url: string, res: Response): void {
  const { contract } = state();
  const fail = (why: string): never => {
    throw new Error(`${method.toUpperCase()} ${url} → ${res.status}: ${why}\nbody: ${JSON.stringify(res.body ?? res.text).slice(0, 2000)}`);
  };
  const requestId = res.headers['x-request-id'];
  if (!requestId || !/^req_[A-Za-z0-9_-]{8,64}$/.test(requestId)) fail(`missing or malformed X-Request-Id "${requestId}"`);

  const urlPath = new URL(url, 'http://x').pathname;
  if ((urlPath.startsWith('/v1/auth/') || urlPath.startsWith('/ops/')) && res.headers['cache-control'] !== 'no-store') {
    fail(`Cache-Control is "${res.headers['cache-control']}", not no-store (every answer under /v1/auth/ and /ops/)`);
  }
  const template = matchPath(contract, method, urlPath);
  const contentType = String(res.headers['content-type'] ?? '').split(';')[0]!.trim();
  const status = String(res.status);
  let name: string;
  let base: string[];
  let response: Record<string, any>;
  if (!template) {
    // No operation (unknown path or wrong method): the shared response for that status (x-status).
    const shared = Object.entries<Record<string, any>>(contract.document.components.responses).find(([, r]) => String(r['x-status']) === status);
    if (!shared) return fail(`no operation matches and no shared response has x-status ${status}`);
    name = `components/responses/${shared[0]}`;
    base = ['components', 'responses', shared[0]];
    response = shared[1];
  } else {
    const m = method.toLowerCase();
    const op = contract.document.paths[template][m];
    const key = op.responses[status] ? status : op.responses[`${status[0]}XX`] ? `${status[0]}XX` : op.responses.default ? 'default' : null;
    if (!key) return fail(`status ${status} is not documented for ${op.operationId}`);
    name = `${op.operationId} ${status}`;
    base = ['paths', template, m, 'responses', key];
    response = op.responses[key];
    if (response.$ref) {
      const ref = response.$ref.split('/').pop();
      base = ['components', 'responses', ref];
      response = contract.document.components.responses[ref];
    }
  }
  // A Problem's code is one its schema's `code` enum lists (the schema check says so too; this
  // names the codes), so a client's switch over the documented codes is complete.
  if (contentType === 'application/problem+json') {
    const codes = problemCodes(contract.document, response);
    if (!codes.includes(res.body?.code)) fail(`code "${res.body?.code}" is not among the codes of ${name} (${codes.join(', ')})`);
  }
  const content = response.content as Record<string, { schema?: unknown }> | undefined;
  if (!content) {
    if (res.text && res.text.length > 0) fail(`${name} documents no body but one was sent`);
  } else {
    if (!content[contentType]) fail(`content type "${contentType}" not documented (${Object.keys(content).join(', ')})`);
    if (content[contentType]!.schema) {
      const body = contentType.endsWith('json') ? res.body : res.text;
      const v = validatorFor(pointer(...base, 'content', contentType, 'schema'));
      if (!v(body)) fail(`body does not match ${name}: ${JSON.stringify(v.errors)}`);
    }
  }
  for (const [name, header] of Object.entries<Record<string, any>>(response.headers ?? {})) {
    const h = header.$ref ? contract.document.components.headers[header.$ref.split('/').pop()] : header;
    const value = res.headers[name.toLowerCase()];
    if (value === undefined) {
      if (h.required) fail(`required header ${name} missing`);
      continue;
    }
    if (h.schema?.type === 'integer' && !/^\d+$/.test(String(value))) fail(`header ${name} "${value}" is not an integer`);
    if (h.schema?.pattern && !new RegExp(h.schema.pattern).test(String(value))) fail(`header ${name} "${value}" does not match ${h.schema.pattern}`);
    if (h.schema?.enum && !h.schema.enum.includes(String(value))) fail(`header ${name} "${value}" is not one of ${h.schema.enum.join(', ')}`);
  }
  if (res.status === 405 && !res.headers.allow) fail('405 without Allow');
}
