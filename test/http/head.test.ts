// HEAD on every GET operation of the contract: the status and headers GET answers, and no body;
// on a GET marked `x-head: false` (it changes state, which HEAD must not), 405 with Allow: GET.
import supertest from 'supertest';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { exampleRequest } from '../support/examples';

let t: TestApp;
let operatorAuth: string;
beforeAll(async () => {
  t = await startTestApp();
  operatorAuth = (await signedInUser(t.ctx, { operator: true })).auth;
});
afterAll(() => t.close());

/** Headers whose value is made anew for each answer. */
const PER_ANSWER = new Set(['date', 'x-request-id', 'set-cookie', 'location', 'ratelimit']);

const allGets = () => [...t.ctx.contract.operations.values()].filter((op) => op.method === 'get');
const marked = (op: { path: string }) => t.ctx.contract.document.paths[op.path].get['x-head'] === false;
const gets = () => allGets().filter((op) => !marked(op));

it('answers HEAD on every GET operation as GET does, without a body', async () => {
  expect(gets().length).toBeGreaterThan(30);
  const agent = supertest(t.server);
  for (const op of gets()) {
    const { url } = exampleRequest(t.ctx.contract, op);
    for (const auth of [operatorAuth, undefined]) {
      // identity: a compressed GET drops Content-Length, which HEAD (never compressed) keeps.
      const send = (method: 'get' | 'head') => {
        const req = agent[method](url).set('Accept-Encoding', 'identity');
        return auth ? req.set('Authorization', auth) : req;
      };
      const get = await send('get');
      const head = await send('head');
      // Some answers change between two requests (uptimes, counts): their length is compared
      // below on a stable one; here only that both have one.
      const comparable = (res: supertest.Response) => ({
        op: op.operationId,
        status: res.status,
        headers: Object.fromEntries(
          Object.entries(res.headers)
            .filter(([name]) => !PER_ANSWER.has(name))
            .map(([name, value]) => [name, name === 'content-length' ? 'present' : value]),
        ),
      });
      expect(comparable(head)).toEqual(comparable(get));
      expect({ op: op.operationId, body: head.text ?? '' }).toEqual({ op: op.operationId, body: '' });
    }
  }
});

it('refuses HEAD with 405 and Allow: GET on exactly the GET operations marked x-head: false', async () => {
  const refused = allGets().filter(marked);
  expect(refused.map((op) => op.operationId).sort()).toEqual(['providerACallback', 'startSocialLogin']);
  for (const op of refused) {
    const { url } = exampleRequest(t.ctx.contract, op);
    const res = await supertest(t.server).head(url);
    expect({ op: op.operationId, status: res.status, allow: res.headers.allow }).toEqual({ op: op.operationId, status: 405, allow: 'GET' });
  }
});

it('gives HEAD the Content-Length of the GET answer', async () => {
  const get = await t.http.get('/v1/auth/me').set('Authorization', operatorAuth).set('Accept-Encoding', 'identity').expect(200);
  const head = await t.http.head('/v1/auth/me').set('Authorization', operatorAuth).set('Accept-Encoding', 'identity').expect(200);
  expect(Number(head.headers['content-length'])).toBe(Buffer.byteLength(get.text));
});

it('lists HEAD beside GET in Allow', async () => {
  const res = await t.http.delete('/v1/ping').expect(405);
  expect(res.headers.allow).toBe('GET, HEAD');
});
