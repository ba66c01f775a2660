// The contract (openapi.yaml), loaded once, and what the HTTP layer derives from it.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { projectRoot } from './config';

type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'patch';
const METHODS: HttpMethod[] = ['get', 'put', 'post', 'delete', 'patch'];

type SecurityRequirement = Record<string, string[]>;

/** An object of the parsed contract (the document, a path item, an operation…): untyped JSON. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML with no schema type; its readers (here, src/http, the tests) index it by path
type JsonObject = Record<string, any>;

export interface OperationInfo {
  operationId: string;
  method: HttpMethod;
  path: string;
  tags: string[];
  /** Effective requirements (the operation's own, else the document's). Empty: public. */
  security: SecurityRequirement[];
  /** True when `{}` is among the requirements or there are none: a session is optional. */
  public: boolean;
  /** Roles named in the requirements' scopes (e.g. `operator` on /ops). */
  roles: string[];
  /** Media types of the request body (the keys of `requestBody.content`, lower case); empty without a body. */
  requestMediaTypes: string[];
}

export interface Contract {
  /** The document as parsed; never mutated. */
  document: JsonObject;
  yamlText: string;
  jsonText: string;
  version: string;
  operations: Map<string, OperationInfo>;
  /** Path template → the methods of its operations (upper case). */
  methodsByPath: Map<string, string[]>;
  /**
   * Path template → the methods it answers, for `Allow` and CORS: its operations' methods, with
   * HEAD beside GET unless the GET operation is marked `x-head: false` (a GET that changes state,
   * which HEAD, a safe method, must not).
   */
  allowByPath: Map<string, string[]>;
  /** The path template a URL path matches (the most specific one, see compilePathMatcher). */
  matchPath: (urlPath: string) => string | undefined;
}

/**
 * Parsing the 440 KB YAML takes about half a second; its JSON, a hundredth of that. The parsed
 * document is kept as JSON under the hash of the YAML in the project's own cache directory
 * (node_modules/.cache, not a shared temp directory another user could write a contract into), so
 * the processes of a test run or of a deploy parse the YAML once between them.
 */
const CACHE_DIR = path.join(projectRoot, 'node_modules', '.cache', 'tenant-api');

function parseCached(yamlText: string): JsonObject {
  const cacheFile = path.join(CACHE_DIR, `contract-${createHash('sha256').update(yamlText).digest('hex')}.json`);
  try {
    return JSON.parse(fs.readFileSync(cacheFile, 'utf8'));
  } catch {
    const document = YAML.parse(yamlText) as JsonObject;
    try {
      // Written aside and renamed, so a concurrent reader never sees half a file.
      fs.mkdirSync(CACHE_DIR, { recursive: true });
      const partial = `${cacheFile}.${process.pid}`;
      fs.writeFileSync(partial, JSON.stringify(document));
      fs.renameSync(partial, cacheFile);
    } catch {
      // A read-only temp directory only costs the next process a parse.
    }
    return document;
  }
}

export function loadContract(file = path.join(projectRoot, 'openapi.yaml')): Contract {
  const yamlText = fs.readFileSync(file, 'utf8');
  const document = parseCached(yamlText);
  const operations = new Map<string, OperationInfo>();
  const methodsByPath = new Map<string, string[]>();
  const allowByPath = new Map<string, string[]>();
  for (const [p, item] of Object.entries<JsonObject>(document.paths ?? {})) {
    const methods: string[] = [];
    const allow: string[] = [];
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      methods.push(method.toUpperCase());
      allow.push(method.toUpperCase(), ...(method === 'get' && op['x-head'] !== false ? ['HEAD'] : []));
      const security: SecurityRequirement[] = op.security ?? document.security ?? [];
      const requestBody = resolveRef(document, op.requestBody);
      operations.set(op.operationId, {
        operationId: op.operationId,
        method,
        path: p,
        tags: op.tags ?? [],
        security,
        public: security.length === 0 || security.some((r) => Object.keys(r).length === 0),
        roles: [...new Set(security.flatMap((r) => Object.values(r).flat()))],
        requestMediaTypes: Object.keys(requestBody?.content ?? {}).map((t) => t.toLowerCase()),
      });
    }
    methodsByPath.set(p, methods);
    allowByPath.set(p, allow);
  }
  return {
    document,
    yamlText,
    jsonText: JSON.stringify(document),
    version: String(document.info?.version ?? '0.0.0'),
    operations,
    methodsByPath,
    allowByPath,
    matchPath: compilePathMatcher([...methodsByPath.keys()].map((template) => [template, template] as const)),
  };
}

/** Follows local `$ref`s (`#/components/...`) until the object they name. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any node of the parsed contract (or undefined) in and out, as untyped as JsonObject's members
export function resolveRef(document: JsonObject, obj: any): any {
  while (obj?.$ref) {
    obj = String(obj.$ref)
      .replace(/^#\//, '')
      .split('/')
      .reduce<JsonObject | undefined>((o, k) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], document);
  }
  return obj;
}

/** The shared Idempotency-Key parameter of the operations that take one. */
const IDEMPOTENCY_KEY_PARAMETER = '#/components/parameters/IdempotencyKey';

/**
 * The document handed to openapi-backend: each operation states its effective security, and
 * declares no Idempotency-Key. The router reads that header itself, only on a request that sends
 * it (src/http/idempotent-call.ts): as a declared parameter, every request of those operations
 * would go through the full parameter validation, and one without the key must pay nothing.
 */
export function routingDocument(contract: Contract): JsonObject {
  const doc = structuredClone(contract.document);
  for (const item of Object.values<JsonObject>(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      if (!op.security) op.security = doc.security ?? [];
      if (op.parameters) {
        op.parameters = op.parameters.filter((p: JsonObject) => p.$ref !== IDEMPOTENCY_KEY_PARAMETER && !(p.in === 'header' && /^idempotency-key$/i.test(p.name)));
        if (!op.parameters.length) delete op.parameters;
      }
    }
  }
  return doc;
}

/** Methods allowed on the path template that matches `urlPath`, if any. */
export function allowedMethods(contract: Contract, urlPath: string): string[] {
  const template = contract.matchPath(urlPath);
  return (template && contract.methodsByPath.get(template)) || [];
}

/**
 * Compiles path templates into a matcher that finds the template a URL path matches, as OpenAPI
 * says: the exact (all-literal) path first, else the most specific template, where a literal
 * segment beats a `{parameter}` at the first position where two templates differ
 * (`/v1/auth/passkeys/registration` before `/v1/auth/passkeys/{id}`). The method is looked up on
 * that path afterwards, so a wrong method answers 405 from the most specific path, never a
 * route of a less specific one. Trailing slashes are ignored; a parameter matches one
 * non-empty segment.
 */
export function compilePathMatcher<T>(entries: Iterable<readonly [template: string, value: T]>): (urlPath: string) => T | undefined {
  const exact = new Map<string, T>();
  const templates: { kinds: number[]; regex: RegExp; value: T }[] = [];
  for (const [template, value] of entries) {
    if (!template.includes('{')) {
      exact.set(template, value);
      continue;
    }
    const segments = template.split('/');
    templates.push({
      // 0: literal, 1: contains a parameter; compared in order, the lower wins.
      kinds: segments.map((s) => (s.includes('{') ? 1 : 0)),
      regex: new RegExp(`^${segments.map((s) => s.split(/\{[^}]+\}/).map(escapeRegex).join('[^/]+')).join('/')}$`),
      value,
    });
  }
  templates.sort((a, b) => a.kinds.length - b.kinds.length || compareKinds(a.kinds, b.kinds));
  return (urlPath) => {
    let path = urlPath;
    while (path.length > 1 && path.charCodeAt(path.length - 1) === 47 /* / */) path = path.slice(0, -1);
    const hit = exact.get(path);
    if (hit !== undefined) return hit;
    for (const t of templates) if (t.regex.test(path)) return t.value;
    return undefined;
  };
}

function compareKinds(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

export const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
