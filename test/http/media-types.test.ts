// Request bodies are read only in a media type the operation declares (requestBody.content):
// anything else answers 415 unsupported_media_type with Accept; no body at all is left to
// validation.
import { startTestApp, type TestApp } from '../support/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ BCRYPT_COST: '4' });
});
afterAll(() => t.close());

const form = 'email=a%40example.com&password=correct-horse-battery&transport=cookie';

it('refuses a form-encoded sign-in (login CSRF from an HTML form) with 415', async () => {
  for (const url of ['/v1/auth/login', '/v1/auth/register']) {
    const res = await t.http.post(url).set('Content-Type', 'application/x-www-form-urlencoded').send(form).expect(415);
    expect(res.body).toMatchObject({ code: 'unsupported_media_type', status: 415, title: 'Unsupported Media Type' });
    expect(res.headers.accept).toBe('application/json');
  }
});

it('refuses every media type a JSON operation does not declare', async () => {
  for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'application/merge-patch+json', 'multipart/form-data; boundary=x']) {
    const res = await t.http.post('/v1/echo').set('Content-Type', type).send('message=hi');
    expect({ type, status: res.status, code: res.body.code }).toEqual({ type, status: 415, code: 'unsupported_media_type' });
  }
  // A body without any Content-Type.
  const untyped = await t.http.post('/v1/echo').set('Content-Length', '2').unset('Content-Type').send(Buffer.from('{}')).expect(415);
  expect(untyped.body.code).toBe('unsupported_media_type');
});

it('accepts the declared type whatever its parameters and case', async () => {
  for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON']) {
    const res = await t.http.post('/v1/echo').set('Content-Type', type).send('{"message":"hi"}');
    expect({ type, status: res.status }).toEqual({ type, status: 200 });
  }
});

it('takes only the form encoding on the provider_b callback, which declares it', async () => {
  const json = await t.http.post('/v1/auth/provider_b/callback').send({ code: 'c', state: 'st_1' }).expect(415);
  expect(json.headers.accept).toBe('application/x-www-form-urlencoded');
  const res = await t.http.post('/v1/auth/provider_b/callback').set('Content-Type', 'application/x-www-form-urlencoded').send('code=c&state=st_1');
  expect(res.status).not.toBe(415);
  expect(res.status).not.toBe(422);
});

it('treats a request without a body as no body, whatever its Content-Type (422 when one is required)', async () => {
  const res = await t.http.post('/v1/echo').set('Content-Type', 'text/plain').expect(422);
  expect(res.body.errors).toEqual([{ location: 'body', message: 'a JSON request body is required' }]);
});

it('authenticates before looking at the body: anonymous callers get 401, not 415', async () => {
  const res = await t.http.post('/ops/mail/test').set('Content-Type', 'text/plain').send('to=x').expect(401);
  expect(res.body.code).toBe('unauthenticated');
});
