import { startTestApp, type TestApp } from '../support/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('GET /v1/ping', () => {
  it('answers pong with the server time', async () => {
    const res = await t.http.get('/v1/ping').expect(200);
    expect(res.body).toEqual({ pong: true, time: t.clock.now.toISOString() });
  });
});

describe('POST /v1/echo', () => {
  it('echoes a valid message with the request id', async () => {
    const res = await t.http.post('/v1/echo').send({ message: 'Hello, world' }).expect(200);
    expect(res.body).toEqual({ message: 'Hello, world', request_id: res.headers['x-request-id'] });
  });

  it('answers 422 naming every offending field', async () => {
    const res = await t.http.post('/v1/echo').send({ message: 'x'.repeat(1001), extra: 1 }).expect(422);
    expect(res.body).toMatchObject({ code: 'validation_failed', status: 422, title: 'Unprocessable Content', type: 'about:blank' });
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        { location: 'body.message', message: 'must NOT have more than 1000 characters' },
        { location: 'body.extra', message: 'is not allowed' },
      ]),
    );
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
  });

  it('names a missing field and a wrong type', async () => {
    const missing = await t.http.post('/v1/echo').send({}).expect(422);
    expect(missing.body.errors).toEqual([{ location: 'body.message', message: 'is required' }]);
    const wrongType = await t.http.post('/v1/echo').send({ message: 42 }).expect(422);
    expect(wrongType.body.errors).toEqual([{ location: 'body.message', message: 'must be string' }]);
  });

  it('answers 422 at `body` when there is no body, and 415 for a body that is not JSON', async () => {
    const res = await t.http.post('/v1/echo').set('Content-Type', 'text/plain').expect(422);
    expect(res.body.errors).toEqual([{ location: 'body', message: 'a JSON request body is required' }]);
    const text = await t.http.post('/v1/echo').set('Content-Type', 'text/plain').send('hello').expect(415);
    expect(text.body.code).toBe('unsupported_media_type');
  });

  it('answers 400 malformed_body for broken JSON', async () => {
    const res = await t.http.post('/v1/echo').set('Content-Type', 'application/json').send('{"message": ').expect(400);
    expect(res.body).toMatchObject({ code: 'malformed_body', status: 400, title: 'Bad Request' });
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it('answers 400 malformed_body for a body in an unsupported charset', async () => {
    const res = await t.http.post('/v1/echo').set('Content-Type', 'application/json; charset=latin1').send('{"message":"hi"}').expect(400);
    expect(res.body.code).toBe('malformed_body');
  });

  it('answers 413 payload_too_large above 1 MiB', async () => {
    const res = await t.http
      .post('/v1/echo')
      .send({ message: 'x'.repeat(1024 * 1024 + 10) })
      .expect(413);
    expect(res.body).toMatchObject({ code: 'payload_too_large', status: 413 });
  });
});

describe('request ids', () => {
  it('keeps a valid incoming X-Request-Id and echoes it in Problems', async () => {
    const id = 'req_incoming_12345678';
    const res = await t.http.post('/v1/echo').set('X-Request-Id', id).send({}).expect(422);
    expect(res.headers['x-request-id']).toBe(id);
    expect(res.body.request_id).toBe(id);
  });

  it('replaces an invalid incoming id with a new one', async () => {
    const res = await t.http.get('/v1/ping').set('X-Request-Id', 'bad id; drop table').expect(200);
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-z]{26}$/);
  });

  it('makes a new id per request', async () => {
    const [a, b] = await Promise.all([t.http.get('/v1/ping'), t.http.get('/v1/ping')]);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });
});

describe('unknown paths and methods', () => {
  it('answers 404 Problem for an unknown path', async () => {
    const res = await t.http.get('/v1/nope').expect(404);
    expect(res.body).toMatchObject({ code: 'not_found', status: 404, title: 'Not Found' });
  });

  it('answers 405 with Allow for a wrong method on a known path', async () => {
    const res = await t.http.delete('/v1/ping').expect(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    expect(res.body).toMatchObject({ code: 'method_not_allowed', status: 405 });
    const templated = await t.http.put('/v1/orgs/org_01jd8x4k3m5n6p7q8r9s0t1v2w').expect(405);
    expect(templated.headers.allow).toBe('GET, HEAD, DELETE, PATCH');
  });
});

describe('GET /version', () => {
  it('describes the build', async () => {
    const res = await t.http.get('/version').expect(200);
    expect(res.body).toMatchObject({ node: process.version, api_version: t.ctx.contract.version });
    expect(res.body.version).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('API reference', () => {
  it('serves the Redoc page with its script from this service under a strict CSP', async () => {
    const page = await t.http.get('/docs').expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('<script src="/docs/redoc.standalone.js"></script>');
    expect(page.text).not.toMatch(/https?:\/\//);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    const script = await t.http.get('/docs/redoc.standalone.js').expect(200);
    expect(script.headers['content-type']).toMatch(/^application\/javascript/);
    expect(script.text.length).toBeGreaterThan(100_000);
  });

  it('serves the contract as YAML and JSON', async () => {
    const yaml = await t.http.get('/openapi.yaml').expect(200);
    expect(yaml.text).toMatch(/^openapi: 3\.1\.0/);
    const json = await t.http.get('/openapi.json').expect(200);
    expect(json.body.openapi).toBe('3.1.0');
    expect(Object.keys(json.body.paths).length).toBeGreaterThan(60);
  });

  it('sends a deny-all CSP on API answers', async () => {
    const res = await t.http.get('/v1/ping').expect(200);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-powered-by']).toBeUndefined();
    // helmet's set that current browsers read, on errors too; not the ones none reads (security-headers.ts).
    const expected = {
      'content-security-policy': "default-src 'none';frame-ancestors 'none'",
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-resource-policy': 'same-origin',
      'referrer-policy': 'no-referrer',
      'strict-transport-security': 'max-age=31536000; includeSubDomains',
      'x-frame-options': 'SAMEORIGIN',
    };
    const unread = ['origin-agent-cluster', 'x-dns-prefetch-control', 'x-download-options', 'x-permitted-cross-domain-policies', 'x-xss-protection'];
    for (const answer of [res, await t.http.get('/v1/nowhere').expect(404)]) {
      expect(answer.headers).toMatchObject(expected);
      for (const name of unread) expect(answer.headers[name]).toBeUndefined();
    }
  });
});

describe('health and readiness', () => {
  it('healthz answers while the process is up', async () => {
    await t.http.get('/healthz').expect(200, { status: 'ok' });
  });

  it('readyz answers ready when PostgreSQL and Redis answer', async () => {
    const res = await t.http.get('/readyz').expect(200);
    expect(res.body.status).toBe('ready');
    expect(res.body.checks.database.ok).toBe(true);
    expect(res.body.checks.redis.ok).toBe(true);
  });
});
