// The contract's Idempotency-Key decisions, checked: every POST and PATCH says `accepted` or
// `excluded` with its reason, and an accepting operation documents everything a keyed request
// can get (the header, Idempotent-Replayed, 409 idempotency_key_in_use with Retry-After, 422
// idempotency_key_reused). And the router reads the same decision and the same key syntax.
import { loadContract, resolveRef, routingDocument } from '../../src/contract';
import { acceptsIdempotencyKey } from '../../src/http/idempotent-call';
import { IDEMPOTENCY_KEY_PATTERN } from '../../src/idempotency/key';
import { problemCodes } from '../support/problem-codes';

const contract = loadContract();
const doc = contract.document;
const ops = [...contract.operations.values()];
const raw = (op: (typeof ops)[number]) => doc.paths[op.path][op.method];
const PARAMETER = '#/components/parameters/IdempotencyKey';
const takesKey = (op: (typeof ops)[number]) => (raw(op).parameters ?? []).some((p: { $ref?: string }) => p.$ref === PARAMETER);
const unsafe = ops.filter((op) => op.method === 'post' || op.method === 'patch');
const accepting = unsafe.filter((op) => raw(op)['x-idempotency'] === 'accepted');

it('records a decision on every POST and PATCH: accepted, or excluded with a reason; on no other operation', () => {
  const undecided = unsafe.filter((op) => {
    const decision = raw(op)['x-idempotency'];
    return decision !== 'accepted' && !(typeof decision?.excluded === 'string' && decision.excluded.length > 20 && Object.keys(decision).length === 1);
  });
  expect(undecided.map((op) => op.operationId)).toEqual([]);
  expect(ops.filter((op) => !unsafe.includes(op) && raw(op)['x-idempotency'] !== undefined).map((op) => op.operationId)).toEqual([]);
  expect(accepting.length).toBeGreaterThan(10);
});

it('declares the header exactly where the key is accepted, and only for signed-in callers (a key is scoped to one)', () => {
  expect(ops.filter((op) => takesKey(op) !== accepting.includes(op)).map((op) => op.operationId)).toEqual([]);
  expect(accepting.filter((op) => op.public).map((op) => op.operationId)).toEqual([]);
  expect(ops.filter((op) => acceptsIdempotencyKey(contract, op) !== accepting.includes(op)).map((op) => op.operationId)).toEqual([]);
});

it('documents what a keyed request can get on every accepting operation', () => {
  for (const op of accepting) {
    const responses = raw(op).responses;
    const success = Object.keys(responses).filter((s) => s.startsWith('2'));
    for (const status of success) {
      expect({ id: op.operationId, status, replayed: resolveRef(doc, responses[status]).headers?.['Idempotent-Replayed']?.$ref }).toEqual({
        id: op.operationId,
        status,
        replayed: '#/components/headers/IdempotentReplayed',
      });
    }
    const conflict = resolveRef(doc, responses['409']);
    expect({ id: op.operationId, inUse: problemCodes(doc, conflict).includes('idempotency_key_in_use'), retryAfter: conflict?.headers?.['Retry-After']?.$ref }).toEqual({
      id: op.operationId,
      inUse: true,
      retryAfter: '#/components/headers/RetryAfter',
    });
    expect({ id: op.operationId, codes422: problemCodes(doc, resolveRef(doc, responses['422'])) }).toEqual({
      id: op.operationId,
      codes422: expect.arrayContaining(['validation_failed', 'idempotency_key_reused']),
    });
  }
});

it('documents the key codes on no operation that takes no key', () => {
  const stray = ops
    .filter((op) => !accepting.includes(op))
    .flatMap((op) => Object.entries<any>(raw(op).responses).filter(([, r]) => problemCodes(doc, resolveRef(doc, r)).some((c) => c.startsWith('idempotency_key_'))).map(([s]) => `${op.operationId} ${s}`));
  expect(stray).toEqual([]);
});

it('gives the key the syntax the router reads (a Structured Field string, or bare)', () => {
  const schema = doc.components.parameters.IdempotencyKey.schema;
  expect(schema.pattern).toBe(IDEMPOTENCY_KEY_PATTERN.source);
  // ajv compiles patterns with the `u` flag: the same answers.
  const unicode = new RegExp(schema.pattern, 'u');
  for (const value of ['"8e03978e-40d5-43e8-bc93-6894a57f9324"', 'bare', '"a \\" b"', '""', 'a b', '"\u0000"', '"é"', `"${'k'.repeat(255)}"`, `"${'k'.repeat(256)}"`]) {
    expect({ value, unicode: unicode.test(value) }).toEqual({ value, unicode: IDEMPOTENCY_KEY_PATTERN.test(value) });
  }
});

it('keeps the header out of request validation, so a request without it pays nothing', () => {
  const routing = routingDocument(contract);
  const declared = accepting.filter((op) => (routing.paths[op.path][op.method].parameters ?? []).some((p: any) => p.$ref === PARAMETER || p.name === 'Idempotency-Key'));
  expect(declared.map((op) => op.operationId)).toEqual([]);
});
