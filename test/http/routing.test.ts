// Every operation of the contract is routed: its method and path reach it (never 404/405), and
// with a valid example request from an operator, a not-yet-implemented one answers 501.
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { exampleRequest } from '../support/examples';
import { pendingOperations } from '../../handlers';

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

it('answers 501 not_implemented for every pending operation, after auth and validation pass', async () => {
  for (const op of t.ctx.contract.operations.values()) {
    if (!pendingOperations(t.ctx.contract.operations.keys()).has(op.operationId)) continue;
    const req = exampleRequest(t.ctx.contract, op);
    const res = await send(op.method, req.url, req, op.public ? undefined : operatorAuth);
    expect({ op: op.operationId, status: res.status, body: res.status === 501 ? null : res.body }).toEqual({ op: op.operationId, status: 501, body: null });
    expect(res.body).toMatchObject({ code: 'not_implemented', status: 501, title: 'Not Implemented' });
  }
});
