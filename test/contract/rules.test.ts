// Rules over the contract itself, so its conventions are enforced by a tool and not only by prose.
import fs from 'node:fs';
import path from 'node:path';
import { loadContract, resolveRef } from '../../src/contract';
import { handlers } from '../../handlers';
import { projectRoot } from '../../src/config';
import { problemCodes } from '../support/problem-codes';

const contract = loadContract();
const ops = [...contract.operations.values()];
const raw = (op: (typeof ops)[number]) => contract.document.paths[op.path][op.method];
const deref = (obj: any) => resolveRef(contract.document, obj);

it('covers every operation of the spec seed', () => {
  // A copy of the spec's operation list (shared/seed/operations.txt), kept in the project so the
  // suite runs on a fresh clone.
  const seed = fs.readFileSync(path.join(projectRoot, 'test/contract/spec-operations.txt'), 'utf8').trim().split('\n');
  const have = new Set(ops.map((o) => `${o.method.toUpperCase()} ${o.path}`));
  const missing = seed.filter((line) => !have.has(line.trim()));
  expect(missing).toEqual([]);
});

it('every handler serves an operation of the contract', () => {
  const ids = new Set(ops.map((o) => o.operationId));
  expect(Object.keys(handlers).filter((id) => !ids.has(id))).toEqual([]);
});

it('every operation of the contract has a handler, and none documents 501', () => {
  expect(ops.filter((op) => !(op.operationId in handlers)).map((op) => op.operationId)).toEqual([]);
  expect(ops.filter((op) => '501' in raw(op).responses).map((op) => op.operationId)).toEqual([]);
});

it('every write that accepts the session cookie documents 403 (the Origin check refuses cross-site requests)', () => {
  const missing = ops.filter((op) => !['get', 'head'].includes(op.method) && op.security.some((r) => 'sessionCookie' in r) && !('403' in raw(op).responses));
  expect(missing.map((op) => op.operationId)).toEqual([]);
});

it('every operation has a summary, a description and tags', () => {
  for (const op of ops) {
    const o = raw(op);
    expect({ id: op.operationId, summary: !!o.summary, description: !!o.description, tags: op.tags.length > 0 }).toEqual({
      id: op.operationId,
      summary: true,
      description: true,
      tags: true,
    });
  }
});

it('every request body has an example and every error response names its codes', () => {
  for (const op of ops) {
    const o = raw(op);
    if (o.requestBody) {
      const body = deref(o.requestBody);
      for (const [type, media] of Object.entries<any>(body.content)) {
        const has = media.example !== undefined || media.examples !== undefined || deref(media.schema)?.example !== undefined;
        expect({ id: op.operationId, type, example: has }).toEqual({ id: op.operationId, type, example: true });
      }
    }
    for (const [status, response] of Object.entries<any>(o.responses)) {
      if (Number(status) < 400) continue;
      const r = deref(response);
      const codes = problemCodes(contract.document, r);
      expect({ id: op.operationId, status, codes: codes.length > 0 }).toEqual({ id: op.operationId, status, codes: true });
      for (const code of codes) expect({ id: op.operationId, status, code, inDescription: r.description.includes(`\`${code}\``) }).toMatchObject({ inDescription: true });
    }
  }
});

describe('schemas, as SDK generators name them', () => {
  /** Every schema object below `node` (not examples), with its JSON path. */
  function* schemasIn(node: any, at: string, root: boolean): Generator<{ at: string; schema: any; root: boolean }> {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const [i, n] of node.entries()) yield* schemasIn(n, `${at}/${i}`, false);
      return;
    }
    yield { at, schema: node, root };
    for (const [k, v] of Object.entries(node)) if (k !== 'example' && k !== 'examples') yield* schemasIn(v, `${at}/${k}`, false);
  }
  const everywhere = () => [
    ...Object.entries<any>(contract.document.components.schemas).flatMap(([name, s]) => [...schemasIn(s, `schemas/${name}`, true)]),
    ...schemasIn(contract.document.paths, 'paths', false),
    ...schemasIn(contract.document.components.parameters, 'parameters', false),
    ...schemasIn(contract.document.components.responses, 'responses', false),
  ];
  const isObject = (s: any) => s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object'));

  it('enums and objects are named components (generators would otherwise invent names like MfaChallengeMethodsItem)', () => {
    const inline = everywhere()
      .filter(({ schema, root }) => !root && !schema.$ref && (Array.isArray(schema.enum) || (isObject(schema) && (schema.properties || schema.additionalProperties))))
      .map(({ at }) => at);
    expect(inline).toEqual([]);
  });

  it('compositions combine named schemas (or null), never inline objects (no generated …AllOf names)', () => {
    const inline = everywhere().flatMap(({ at, schema }) =>
      ['allOf', 'oneOf', 'anyOf'].flatMap((k) => (schema[k] ?? []).filter((m: any) => !m.$ref && m.type !== 'null').map(() => `${at}/${k}`)),
    );
    expect(inline).toEqual([]);
  });

  it('every object says what it holds (an object with neither properties nor additionalProperties becomes Record<string, never>)', () => {
    const empty = everywhere()
      .filter(({ schema }) => isObject(schema) && !schema.properties && schema.additionalProperties === undefined && !schema.allOf && !schema.oneOf && !schema.anyOf)
      .map(({ at }) => at);
    expect(empty).toEqual([]);
  });
});

describe('problem schemas, as SDK generators read them', () => {
  const schemas = contract.document.components.schemas as Record<string, any>;
  const problemResponses = () =>
    ops.flatMap((op) =>
      Object.entries<any>(raw(op).responses)
        .filter(([status]) => Number(status) >= 400)
        .map(([status, response]) => ({ where: `${op.operationId} ${status}`, status, media: deref(response).content?.['application/problem+json'] })),
    );

  it('each error response names its own problem schema, whose code is a named enum (a typed switch)', () => {
    for (const { where, media } of problemResponses()) {
      const ref: string | undefined = media?.schema?.$ref;
      expect({ where, named: !!ref }).toEqual({ where, named: true });
      const codeRef: string | undefined = deref(media.schema).properties?.code?.$ref;
      expect({ where, codeIsNamedEnum: !!codeRef && Array.isArray(deref({ $ref: codeRef }).enum) }).toEqual({ where, codeIsNamedEnum: true });
    }
  });

  it('every 422 problem schema declares errors as a required array of ValidationIssue', () => {
    for (const { where, status, media } of problemResponses()) {
      if (status !== '422') continue;
      const schema = deref(media.schema);
      expect({ where, required: schema.required.includes('errors'), errors: schema.properties.errors }).toEqual({
        where,
        required: true,
        errors: { $ref: '#/components/schemas/ValidationIssues' },
      });
    }
  });

  it('ProblemCode lists exactly the codes of every problem schema', () => {
    const used = new Set<string>();
    for (const [name, schema] of Object.entries(schemas)) {
      if (name === 'Problem' || !schema.properties?.code?.$ref) continue;
      for (const code of deref(schema.properties.code).enum ?? []) used.add(code);
    }
    expect([...schemas.ProblemCode.enum].sort()).toEqual([...used].sort());
  });
});

it('every operation with a body documents 400, 413, 415 and 422; every protected one 401; every /ops one 403', () => {
  for (const op of ops) {
    const responses = Object.keys(raw(op).responses);
    const want = [
      ...(raw(op).requestBody ? ['400', '413', '415', '422'] : []),
      ...(op.public ? [] : ['401']),
      ...(op.roles.includes('operator') ? ['403'] : []),
    ];
    expect({ id: op.operationId, missing: want.filter((s) => !responses.includes(s)) }).toEqual({ id: op.operationId, missing: [] });
  }
});

it('every component schema has a description and an example', () => {
  for (const [name, schema] of Object.entries<any>(contract.document.components.schemas)) {
    expect({ name, description: !!schema.description, example: schema.example !== undefined || schema.examples !== undefined }).toEqual({
      name,
      description: true,
      example: true,
    });
  }
});

it('every /ops operation requires the operator role, with no anonymous alternative', () => {
  const opsOps = ops.filter((op) => op.path === '/ops' || op.path.startsWith('/ops/'));
  expect(opsOps.length).toBeGreaterThan(10);
  for (const op of opsOps) {
    const everyRequirementNeedsOperator = op.security.length > 0 && op.security.every((r) => Object.keys(r).length > 0 && Object.values(r).some((scopes) => scopes.includes('operator')));
    expect({ id: op.operationId, operatorOnly: everyRequirementNeedsOperator }).toEqual({ id: op.operationId, operatorOnly: true });
  }
});

describe('no NUL in a request (PostgreSQL text cannot hold U+0000)', () => {
  /**
   * True when the pattern (compiled as ajv does, with the `u` flag) refuses every probe with a
   * NUL: alone, and at the start, inside and at the end of the schema's example.
   */
  function refusesNul(pattern: unknown, example: unknown): boolean {
    if (typeof pattern !== 'string') return false;
    const re = new RegExp(pattern, 'u');
    const sample = typeof example === 'string' && example ? example : 'a';
    const half = Math.floor(sample.length / 2);
    const probes = ['\u0000', `${sample}\u0000`, `\u0000${sample}`, `${sample.slice(0, half)}\u0000${sample.slice(half)}`, `${sample.slice(0, -1)}\u0000`];
    return probes.every((probe) => !re.test(probe));
  }

  /**
   * Where a value valid by `node` may hold a NUL: a string without a pattern refusing it, an
   * object open to property names or values of any kind, an array of anything. And a schema
   * nested in itself: ajv validates it recursively, so a body nested deep enough would overflow
   * the stack (a 500); open members are `JsonValue`s, whose depth is bounded.
   */
  function nulHoles(node: any, at: string, refs: string[] = []): string[] {
    if (node === undefined || node === true) return [`${at}: anything`];
    if (node.$ref) return refs.includes(node.$ref) ? [`${at}: refers to ${node.$ref} inside itself`] : nulHoles(deref(node), at, [...refs, node.$ref]);
    const holes = ['oneOf', 'anyOf', 'allOf'].flatMap((k) => (node[k] ?? []).flatMap((branch: any, i: number) => nulHoles(branch, `${at}/${k}/${i}`, refs)));
    for (const keyword of ['patternProperties', 'prefixItems', 'not', 'if']) if (node[keyword]) holes.push(`${at}: ${keyword}, which this check does not read yet`);
    if (node.enum || node.const !== undefined) return holes;
    const composed = node.oneOf || node.anyOf || node.allOf;
    const types: string[] = node.type ? [node.type].flat() : composed ? [] : ['string', 'object', 'array'];
    if (types.includes('string') && !refusesNul(node.pattern, node.example)) holes.push(`${at}: a string whose pattern does not refuse NUL`);
    if (types.includes('object')) {
      for (const [name, property] of Object.entries<any>(node.properties ?? {})) holes.push(...nulHoles(property, `${at}.${name}`, refs));
      if (node.additionalProperties !== false) {
        if (!refusesNul(deref(node.propertyNames)?.pattern, 'name')) holes.push(`${at}: property names whose pattern does not refuse NUL`);
        holes.push(...nulHoles(node.additionalProperties, `${at}.*`, refs));
      }
    }
    if (types.includes('array')) holes.push(...nulHoles(node.items, `${at}[]`, refs));
    return holes;
  }

  it('every string of every request body, path and query parameter has a pattern refusing NUL (or is an enum), and no request schema nests itself', () => {
    const holes: string[] = [];
    for (const op of ops) {
      const parameters = [...(contract.document.paths[op.path].parameters ?? []), ...(raw(op).parameters ?? [])].map(deref);
      for (const p of parameters) holes.push(...nulHoles(p.schema, `${op.operationId} ${p.in}.${p.name}`));
      for (const [type, media] of Object.entries<any>(deref(raw(op).requestBody)?.content ?? {})) holes.push(...nulHoles(media.schema, `${op.operationId} body (${type})`));
    }
    expect(holes).toEqual([]);
  });

  it('the probe tells a pattern that refuses NUL from one that does not', () => {
    expect(refusesNul('^[^\\u0000]*$', 'Acme')).toBe(true);
    expect(refusesNul('^org_[0-9a-z]{26}$', 'org_01jd8x4k3m5n6p7q8r9s0t1v2w')).toBe(true);
    expect(refusesNul('\\S', 'Acme')).toBe(false);
    expect(refusesNul('^[a-z]', 'acme')).toBe(false);
    expect(refusesNul(undefined, 'Acme')).toBe(false);
  });
});
