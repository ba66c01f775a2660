// Request validation runs before any handler (pending ones too) and names every offending part.
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

  it('names nested fields and array items, and property names', async () => {
    const res = await t.http.post('/v1/echo').send({ message: 'hi\u0000', tags: ['a', 'b', '\u0000'], 'x\u0000': 1 }).expect(422);
    expect(errorsOf(res)).toEqual(
      expect.arrayContaining([
        { location: 'body.message', message: NUL },
        { location: 'body.tags[2]', message: NUL },
        { location: 'body', message: 'must not contain NUL characters in property names' },
      ]),
    );
  });

  it('refuses a NUL in query and path parameters', async () => {
    const query = await t.http.get('/ops/jobs/runs?cursor=abc%00def').set('Authorization', operatorAuth).expect(422);
    expect(errorsOf(query)).toEqual([{ location: 'query.cursor', message: NUL }]);
    for (const url of ['/ops/queues/mail%00/pause', '/ops/jobs/definitions/service.mail%00x/run']) {
      const path = await t.http.post(url).set('Authorization', operatorAuth).expect(422);
      expect(errorsOf(path)).toContainEqual({ location: 'path.name', message: NUL });
    }
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
