// Request validation runs before any handler (pending ones too) and names every offending part.
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { loadContract, resolveRef } from '../../src/contract';
import { newId } from '../../src/ids';
import { exampleRequest } from '../support/examples';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';

let t: TestApp;
let auth: string;
let operatorAuth: string;
beforeAll(async () => {
  t = await startTestApp();
  auth = (await signedInUser(t.ctx)).auth;
  operatorAuth = (await signedInUser(t.ctx, { operator: true })).auth;
});
afterAll(() => t.close());

const errorsOf = (res: { body: { code: string; errors: unknown[] } }) => {
  expect(res.body.code).toBe('validation_failed');
  return res.body.errors;
};

it('a 17-character authenticator code is located at body.code (spec 8: maxLength 16)', async () => {
  const res = await t.http.post('/v1/auth/mfa/recovery-codes').set('Authorization', auth).send({ code: '1'.repeat(17) }).expect(422);
  expect(errorsOf(res)).toEqual([{ location: 'body.code', message: 'must NOT have more than 16 characters' }]);
});

it('locates nested fields with dots (body.passkey.ceremony_token)', async () => {
  const res = await t.http
    .post('/v1/auth/mfa/recovery-codes')
    .set('Authorization', auth)
    .send({ passkey: { ceremony_token: 'x'.repeat(257), credential: { id: 'a', rawId: 'a', type: 'public-key', response: {} } } })
    .expect(422);
  expect(errorsOf(res)).toContainEqual({ location: 'body.passkey.ceremony_token', message: 'must NOT have more than 256 characters' });
});

it('path parameters are percent-decoded before validation, and a malformed escape is a 422 naming the parameter', async () => {
  // %5F is "_": the decoded id is validated (and found unknown), not refused for its "%".
  await t.http.get(`/v1/orgs/${newId('org').replace('_', '%5F')}`).set('Authorization', auth).expect(404);
  const res = await t.http.get('/v1/orgs/org_%E0%A4%A').set('Authorization', auth).expect(422);
  expect(errorsOf(res)).toEqual([{ location: 'path.orgId', message: 'is not valid percent-encoding' }]);
});

describe('a body of one of several shapes (the second factor: code, recovery_code or passkey)', () => {
  const issues = async (body: object) => errorsOf(await t.http.post('/v1/auth/login/mfa').send(body).expect(422));

  it('names the alternatives when the body fits none, instead of every shape complaining', async () => {
    const want = [{ location: 'body', message: 'must have exactly one of: code, passkey, recovery_code' }];
    expect(await issues({ challenge_token: 'chl_x', code: '123456', recovery_code: 'aaaaa-aaaaa' })).toEqual(want);
    expect(await issues({ challenge_token: 'chl_x' })).toEqual(want);
  });

  it('says once what every shape says alike, and keeps the complaints of the shape that fits', async () => {
    expect(await issues({ code: '123456' })).toEqual([{ location: 'body.challenge_token', message: 'is required' }]);
    expect(await issues({ challenge_token: 'chl_x', code: '123456', foo: 1 })).toEqual([{ location: 'body.foo', message: 'is not allowed' }]);
    expect(await issues({ challenge_token: 'chl_x', code: 5 })).toEqual([{ location: 'body.code', message: 'must be string' }]);
    expect(await issues({ challenge_token: 'chl_x', passkey: { ceremony_token: 'cer_x' } })).toEqual([{ location: 'body.passkey.credential', message: 'is required' }]);
  });
});

it('enforces the id_token and nonce limits of the native social sign-in', async () => {
  const res = await t.http.post('/v1/auth/provider_a/token').send({ id_token: 'x'.repeat(16385), nonce: 'n'.repeat(257), transport: 'carrier-pigeon' }).expect(422);
  expect(errorsOf(res)).toEqual(
    expect.arrayContaining([
      { location: 'body.id_token', message: 'must NOT have more than 16384 characters' },
      { location: 'body.nonce', message: 'must NOT have more than 256 characters' },
      expect.objectContaining({ location: 'body.transport' }),
    ]),
  );
});

it('checks the email format of the test mail recipient', async () => {
  const res = await t.http.post('/ops/mail/test').set('Authorization', operatorAuth).send({ to: 'not an email' }).expect(422);
  expect(errorsOf(res)).toEqual([{ location: 'body.to', message: 'must match format "email"' }]);
  const long = await t.http.post('/ops/mail/test').set('Authorization', operatorAuth).send({ to: `${'a'.repeat(250)}@example.com` }).expect(422);
  expect(errorsOf(long)).toContainEqual({ location: 'body.to', message: 'must NOT have more than 254 characters' });
});

it('locates query and path parameters', async () => {
  const query = await t.http.get('/ops/jobs/runs?limit=500&state=sleeping').set('Authorization', operatorAuth).expect(422);
  expect(errorsOf(query)).toEqual(
    expect.arrayContaining([
      { location: 'query.limit', message: 'must be <= 200' },
      // `state` is a list: the location names the offending item, the message the values it takes.
      { location: 'query.state[0]', message: 'must be one of: scheduled, available, running, retryable, completed, cancelled, discarded' },
    ]),
  );
  const path = await t.http.post('/ops/jobs/runs/abc/retry').set('Authorization', operatorAuth).expect(422);
  expect(errorsOf(path)).toContainEqual({ location: 'path.id', message: 'must be integer' });
});

it('requires the version and reason of a definition reset (spec 4.4)', async () => {
  const res = await t.http.delete('/ops/jobs/definitions/service.mail.send').set('Authorization', operatorAuth).send({ version: 'one' }).expect(422);
  expect(errorsOf(res)).toEqual(
    expect.arrayContaining([
      { location: 'body.version', message: 'must be integer' },
      { location: 'body.reason', message: 'is required' },
    ]),
  );
});

it('refuses undeclared query parameters where an operation takes some, and ignores them where it takes none', async () => {
  const list = await t.http.get('/ops/jobs/runs?limt=5').set('Authorization', operatorAuth).expect(422);
  expect(errorsOf(list)).toEqual([{ location: 'query.limt', message: 'is not allowed' }]);
  await t.http.post('/v1/echo?debug=1').send({ message: 'hi' }).expect(200);
  await t.http.get('/v1/auth/me?fields=all').set('Authorization', auth).expect(200);
  const retry = await t.http.post('/ops/jobs/runs/abc/retry?force=1').set('Authorization', operatorAuth).expect(422);
  expect(errorsOf(retry)).toEqual([{ location: 'path.id', message: 'must be integer' }]);
});

it('asks for the body of an operation that requires one', async () => {
  const res = await t.http.post('/v1/echo').expect(422);
  expect(errorsOf(res)).toEqual([{ location: 'body', message: 'a JSON request body is required' }]);
});

describe('NUL characters (PostgreSQL refuses U+0000 in text)', () => {
  const NUL = 'must not contain NUL characters';

  it('refuses a NUL in a body field with 422 naming it, before the database sees it', async () => {
    const res = await t.http.post('/v1/auth/register').send({ email: 'nul@example.com', password: 'correct horse battery staple', name: 'Ada\u0000Lovelace' }).expect(422);
    expect(errorsOf(res)).toEqual([{ location: 'body.name', message: NUL }]);
    expect(await t.ctx.db('users').where({ email: 'nul@example.com' }).first()).toBeUndefined();
  });

  it('names nested fields, array items and property names, also among the members passed on uninterpreted', async () => {
    const credential = { id: 'a', rawId: 'a\u0000', type: 'public-key', response: { clientDataJSON: 'e30', transports: ['usb', 'n\u0000fc'] }, 'x\u0000': 1 };
    const res = await t.http.post('/v1/auth/passkeys/login').send({ ceremony_token: 'cer_x', credential }).expect(422);
    expect(errorsOf(res)).toEqual(
      expect.arrayContaining([
        { location: 'body.credential.rawId', message: NUL },
        { location: 'body.credential.response.transports[1]', message: NUL },
        { location: 'body.credential', message: 'must not contain NUL characters in property names' },
      ]),
    );
    const blank = await t.http.post('/v1/orgs').set('Authorization', auth).send({ name: 'Acme\u0000' }).expect(422);
    expect(errorsOf(blank)).toContainEqual({ location: 'body.name', message: 'must not be blank or contain NUL characters' });
  });

  it('refuses members passed on uninterpreted that nest deeper than JsonValue allows, however deep (422, never a stack overflow)', async () => {
    // Sent as text: the test client's JSON encoder is itself recursive.
    const deep = `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`;
    const credential = `{"id":"a","rawId":"a","type":"public-key","response":{"clientDataJSON":"e30"},"clientExtensionResults":{"prf":${deep}}}`;
    const res = await t.http.post('/v1/auth/passkeys/login').type('json').send(`{"ceremony_token":"cer_x","credential":${credential}}`).expect(422);
    expect(errorsOf(res)).toContainEqual({ location: 'body.credential.clientExtensionResults.prf.a.a.a', message: expect.stringMatching(/^must be /) });
  });

  it('refuses a NUL in query and path parameters', async () => {
    const query = await t.http.get('/ops/jobs/runs?cursor=abc%00def').set('Authorization', operatorAuth).expect(422);
    expect(errorsOf(query)).toEqual([{ location: 'query.cursor', message: NUL }]);
    // Path parameters are ids and names: a NUL breaks their pattern, which the message quotes.
    for (const url of ['/ops/queues/mail%00/pause', '/ops/jobs/definitions/service.mail%00x/run']) {
      const path = await t.http.post(url).set('Authorization', operatorAuth).expect(422);
      expect(errorsOf(path)).toEqual([{ location: 'path.name', message: expect.stringMatching(/^must match pattern "\^\[a-z\]/) }]);
    }
  });

  describe('what the service refuses for a NUL, the contract refuses too (no valid request gets 422)', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(loadContract().document, 'openapi');
    const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
    const contractAccepts = (at: string[], value: unknown) => ajv.validate({ $ref: `openapi#/${pointer(...at)}` }, value);
    const withNul = (s: string) => `${s.slice(0, 1)}\u0000${s.slice(1)}`;

    /** Every string of the example body, as [location, path in the body]. */
    function* strings(value: unknown, location: string, path: (string | number)[]): Generator<[string, (string | number)[]]> {
      if (typeof value === 'string') yield [location, path];
      else if (Array.isArray(value)) for (const [i, v] of value.entries()) yield* strings(v, `${location}[${i}]`, [...path, i]);
      else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) yield* strings(v, `${location}.${k}`, [...path, k]);
    }
    const setIn = (root: any, path: (string | number)[], value: string) => {
      const copy = structuredClone(root);
      path.slice(0, -1).reduce((o, k) => o[k], copy)[path.at(-1)!] = value;
      return copy;
    };

    it('for every string of every example body, with a NUL put in it', async () => {
      const checked: string[] = [];
      for (const op of t.ctx.contract.operations.values()) {
        const example = exampleRequest(t.ctx.contract, op);
        if (!example.contentType || example.body === undefined) continue;
        const bodySchema = ['paths', op.path, op.method, 'requestBody', 'content', example.contentType, 'schema'];
        const url = example.url.replace(/\{[^}]+\}/g, 'x');
        for (const [location, path] of strings(example.body, 'body', [])) {
          const body = setIn(example.body, path, withNul(path.reduce((o: any, k) => o[k], example.body)));
          const where = `${op.operationId} ${location}`;
          expect({ where, contractAccepts: contractAccepts(bodySchema, body) }).toEqual({ where, contractAccepts: false });
          const res = await (t.http as any)[op.method](url).set('Authorization', operatorAuth).type(example.contentType).send(body);
          expect({ where, status: res.status }).toEqual({ where, status: 422 });
          expect({ where, located: res.body.errors.some((e: { location: string }) => e.location === location) }).toEqual({ where, located: true });
          checked.push(where);
        }
      }
      expect(checked.length).toBeGreaterThan(60);
    });

    it('for every path and query parameter that takes a string, with a NUL put in its example', async () => {
      const document = t.ctx.contract.document;
      const checked: string[] = [];
      for (const op of t.ctx.contract.operations.values()) {
        // Each parameter with where it is written (a shared one under components, else in the path item or operation).
        const lists: [string[], any[]][] = [
          [['paths', op.path, 'parameters'], document.paths[op.path].parameters ?? []],
          [['paths', op.path, op.method, 'parameters'], document.paths[op.path][op.method].parameters ?? []],
        ];
        const params = lists.flatMap(([at, list]) => list.map((p, i) => ({ ...resolveRef(document, p), at: p.$ref ? p.$ref.slice(2).split('/') : [...at, String(i)] })));
        const exampleOf = (p: any) => p.example ?? resolveRef(document, p.schema).example;
        for (const param of params) {
          const list = resolveRef(document, param.schema).type === 'array';
          const example = list ? exampleOf(param)[0] : exampleOf(param);
          if (typeof example !== 'string' || !['path', 'query'].includes(param.in)) continue;
          const value = withNul(example);
          const where = `${op.operationId} ${param.in}.${param.name}`;
          expect({ where, contractAccepts: contractAccepts([...param.at, 'schema'], list ? [value] : value) }).toEqual({ where, contractAccepts: false });
          let url = op.path;
          for (const p of params.filter((p) => p.in === 'path')) url = url.replace(`{${p.name}}`, encodeURIComponent(p === param ? value : String(exampleOf(p))));
          const query = new URLSearchParams(params.filter((p) => p.in === 'query' && p.required && p !== param).map((p): [string, string] => [p.name, String(exampleOf(p))]));
          if (param.in === 'query') query.set(param.name, value);
          const res = await (t.http as any)[op.method](`${url}?${query}`).set('Authorization', operatorAuth);
          expect({ where, status: res.status }).toEqual({ where, status: 422 });
          const location = `${param.in}.${param.name}${list ? '[0]' : ''}`;
          expect({ where, located: res.body.errors.some((e: { location: string }) => e.location === location) }).toEqual({ where, located: true });
          checked.push(where);
        }
      }
      expect(checked.length).toBeGreaterThan(60);
    });
  });
});

it('keeps job run ids to the integers the service reads exactly (1 to 2^53 - 1): 422 outside, 404 when unknown', async () => {
  for (const [method, suffix] of [
    ['get', ''],
    ['post', '/cancel'],
    ['post', '/retry'],
  ] as const) {
    for (const id of ['99999999999999999999', '9223372036854775807', '9007199254740992', '0']) {
      const res = await t.http[method](`/ops/jobs/runs/${id}${suffix}`).set('Authorization', operatorAuth);
      expect({ method, suffix, id, status: res.status }).toEqual({ method, suffix, id, status: 422 });
      expect(errorsOf(res)).toEqual([expect.objectContaining({ location: 'path.id' })]);
    }
    const unknown = await t.http[method](`/ops/jobs/runs/9007199254740991${suffix}`).set('Authorization', operatorAuth);
    expect({ method, suffix, status: unknown.status, code: unknown.body.code }).toEqual({ method, suffix, status: 404, code: 'not_found' });
  }
});
