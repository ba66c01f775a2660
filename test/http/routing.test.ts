// Every operation of the contract is routed: its method and path reach it (never 404/405), and
// with a valid example request from an operator.
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { exampleRequest } from '../support/examples';
import { allowedMethods, compilePathMatcher } from '../../src/contract';

let t: TestApp;
let operatorAuth: string;
beforeAll(async () => {
  t = await startTestApp();
  operatorAuth = (await signedInUser(t.ctx, { operator: true })).auth;
});
afterAll(() => t.close());

const send = (method: string, url: string, req: ReturnType<typeof exampleRequest>, auth?: string) => {
  let call = (t.http as any)[method](url);
  if (auth) call = call.set('Authorization', auth);
  if (req.body !== undefined) call = call.set('Content-Type', req.contentType!).send(req.contentType === 'application/x-www-form-urlencoded' ? new URLSearchParams(req.body as any).toString() : req.body);
  return call;
};

it('the contract has the 90 operations of the spec plus 6 system ones', () => {
  expect(t.ctx.contract.operations.size).toBe(90 + 6);
});

it('routes every operation (no 404/405 from routing)', async () => {
  for (const op of t.ctx.contract.operations.values()) {
    const req = exampleRequest(t.ctx.contract, op);
    const res = await send(op.method, req.url, req);
    expect({ op: op.operationId, status: res.status }).not.toEqual({ op: op.operationId, status: 405 });
    if (res.status === 404) expect({ op: op.operationId, detail: res.body.detail }).not.toEqual({ op: op.operationId, detail: 'No such path.' });
  }
});

describe('path precedence (OpenAPI: a literal segment beats a template)', () => {
  it('answers 405 from the literal path, with its Allow, instead of routing to a template', async () => {
    for (const [method, url, allow] of [
      ['patch', '/v1/auth/passkeys/registration', 'POST'],
      ['delete', '/v1/auth/passkeys/login', 'POST'],
      ['get', '/v1/auth/sessions/start', 'DELETE'], // /v1/auth/sessions/{id} beats /v1/auth/{provider}/start
      ['delete', '/ops/audit/stats', 'GET, HEAD'],
    ] as const) {
      const res = await (t.http as any)[method](url).set('Authorization', operatorAuth).send({ name: 'x' });
      expect({ method, url, status: res.status, allow: res.headers.allow, code: res.body.code }).toEqual({ method, url, status: 405, allow, code: 'method_not_allowed' });
    }
  });

  it('still routes to the template when no literal path matches', async () => {
    const res = await t.http.patch('/v1/auth/passkeys/pky_01jd8x4k3m5n6p7q8r9s0t1v2w').set('Authorization', operatorAuth).send({ name: 'Laptop' });
    expect(res.body.code).toBe('not_found');
  });

  it('compares templates segment by segment: the first literal wins, trailing slashes ignored', () => {
    const match = compilePathMatcher(['/a/{x}/c', '/a/b/{y}', '/a/{x}/{y}', '/a/b/c/d', '/{p}/b/c'].map((p) => [p, p] as const));
    expect(match('/a/b/c')).toBe('/a/b/{y}');
    expect(match('/a/z/c')).toBe('/a/{x}/c');
    expect(match('/a/z/q/')).toBe('/a/{x}/{y}');
    expect(match('/z/b/c')).toBe('/{p}/b/c');
    expect(match('/a/b/c/d/')).toBe('/a/b/c/d');
    expect(match('/a//c')).toBeUndefined();
    expect(allowedMethods(t.ctx.contract, '/v1/auth/passkeys/registration')).toEqual(['POST']);
    expect(allowedMethods(t.ctx.contract, '/v1/auth/passkeys/pky_1')).toEqual(['DELETE', 'PATCH']);
  });
});
