// The contract (openapi.yaml), loaded once, and what the HTTP layer derives from it.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { projectRoot } from '../config';

export type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'patch';
const METHODS: HttpMethod[] = ['get', 'put', 'post', 'delete', 'patch'];

type SecurityRequirement = Record<string, string[]>;

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
}

export interface Contract {
  /** The document as parsed; never mutated. */
  document: Record<string, any>;
  yamlText: string;
  jsonText: string;
  version: string;
  operations: Map<string, OperationInfo>;
  /** Path template → the methods it accepts (upper case), for 405 `Allow`. */
  methodsByPath: Map<string, string[]>;
}

export function loadContract(file = path.join(projectRoot, 'openapi.yaml')): Contract {
  const yamlText = fs.readFileSync(file, 'utf8');
  const document = YAML.parse(yamlText) as Record<string, any>;
  const operations = new Map<string, OperationInfo>();
  const methodsByPath = new Map<string, string[]>();
  for (const [p, item] of Object.entries<Record<string, any>>(document.paths ?? {})) {
    const methods: string[] = [];
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      methods.push(method.toUpperCase());
      const security: SecurityRequirement[] = op.security ?? document.security ?? [];
      operations.set(op.operationId, {
        operationId: op.operationId,
        method,
        path: p,
        tags: op.tags ?? [],
        security,
        public: security.length === 0 || security.some((r) => Object.keys(r).length === 0),
        roles: [...new Set(security.flatMap((r) => Object.values(r).flat()))],
      });
    }
    methodsByPath.set(p, methods);
  }
  return {
    document,
    yamlText,
    jsonText: JSON.stringify(document),
    version: String(document.info?.version ?? '0.0.0'),
    operations,
    methodsByPath,
  };
}

/** The document handed to openapi-backend: each operation states its effective security. */
export function routingDocument(contract: Contract): Record<string, any> {
  const doc = structuredClone(contract.document);
  for (const item of Object.values<Record<string, any>>(doc.paths)) {
    for (const method of METHODS) {
      if (item[method] && !item[method].security) item[method].security = doc.security ?? [];
    }
  }
  return doc;
}

/** Methods allowed on the path template that matches `urlPath`, if any. */
export function allowedMethods(contract: Contract, urlPath: string): string[] {
  const segments = urlPath.replace(/\/+$/, '').split('/');
  for (const [template, methods] of contract.methodsByPath) {
    const t = template.split('/');
    if (t.length === segments.length && t.every((s, i) => s.startsWith('{') || s === segments[i])) return methods;
  }
  return [];
}
