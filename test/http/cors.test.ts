// CORS for the configured app origins (APP_ORIGINS): preflights answered with credentials allowed,
// answers readable by those origins, and nothing for any other origin. Cookie writes are still
// refused from other origins (CSRF), whatever CORS says.
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { sessionCookieName } from '../../src/http/authenticate';

const APP = 'https://app.example.com';
const ADMIN = 'https://admin.example.com';
const EVIL = 'https://evil.example.net';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ APP_ORIGINS: `${APP},${ADMIN}`, WEBAUTHN_RP_ID: 'example.com' });
});
afterAll(() => t?.close());

const CORS_HEADERS = [
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
  'access-control-expose-headers',
];
const corsHeadersOf = (headers: Record<string, string>) => CORS_HEADERS.filter((h) => h in headers);

describe('preflight', () => {
  it('is answered 204 for an app origin, with that origin, credentials, the methods of the path and the headers the API reads', async () => {
    for (const origin of [APP, ADMIN]) {
      const res = await t.http
        .options('/v1/orgs/org_01jd8x4k3m5n6p7q8r9s0t1v2w')
        .set('Origin', origin)
        .set('Access-Control-Request-Method', 'PATCH')
        .set('Access-Control-Request-Headers', 'content-type, authorization')
        .expect(204);
      expect(res.headers['access-control-allow-origin']).toBe(origin);
      expect(res.headers['access-control-allow-credentials']).toBe('true');
      expect(res.headers['access-control-allow-methods']!.split(', ').sort()).toEqual(['DELETE', 'GET', 'HEAD', 'PATCH']);
      const allowed = res.headers['access-control-allow-headers']!.toLowerCase().split(', ');
      expect(allowed).toEqual(expect.arrayContaining(['authorization', 'content-type', 'x-request-id']));
      expect(Number(res.headers['access-control-max-age'])).toBeGreaterThan(0);
      expect(res.headers.vary).toMatch(/\bOrigin\b/);
      expect(res.text ?? '').toBe('');
    }
  });

  it('is not answered as allowed for another origin', async () => {
    const res = await t.http.options('/v1/auth/login').set('Origin', EVIL).set('Access-Control-Request-Method', 'POST');
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(corsHeadersOf(res.headers)).toEqual([]);
    expect(res.headers.vary).toMatch(/\bOrigin\b/);
  });

  it('leaves an unknown path to the router (404)', async () => {
    const res = await t.http.options('/v1/nowhere').set('Origin', APP).set('Access-Control-Request-Method', 'GET').expect(404);
    expect(res.headers['access-control-allow-methods']).toBeUndefined();
  });
});

describe('actual requests', () => {
  it('give an app origin the origin, credentials and the headers it may read (those the contract documents)', async () => {
    const res = await t.http.get('/v1/ping').set('Origin', APP).expect(200);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers.vary).toMatch(/\bOrigin\b/);
    const exposed = res.headers['access-control-expose-headers']!.split(', ');
    expect(exposed).toEqual(expect.arrayContaining(['X-Request-Id', 'Retry-After', 'RateLimit', 'RateLimit-Policy', 'Location', 'Allow']));
    // Readable without being exposed, or never readable.
    expect(exposed.map((h) => h.toLowerCase())).not.toEqual(expect.arrayContaining(['content-type']));
    expect(exposed.map((h) => h.toLowerCase())).not.toContain('set-cookie');
  });

  it('give errors the same headers, so an app can read the Problem', async () => {
    const res = await t.http.get('/v1/auth/me').set('Origin', APP).expect(401);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
  });

  it('give another origin, or a request without Origin, no CORS header', async () => {
    for (const origin of [EVIL, 'null', `${APP}.evil.example.net`, 'http://app.example.com']) {
      const res = await t.http.get('/v1/ping').set('Origin', origin).expect(200);
      expect({ origin, cors: corsHeadersOf(res.headers) }).toEqual({ origin, cors: [] });
    }
    const res = await t.http.get('/v1/ping').expect(200);
    expect(corsHeadersOf(res.headers)).toEqual([]);
    expect(res.headers.vary).toMatch(/\bOrigin\b/);
  });

  it('still refuse cookie writes from another origin (CSRF), and take them from an app origin', async () => {
    const user = await signedInUser(t.ctx, { transport: 'cookie' });
    const cookie = `${sessionCookieName(t.ctx.config)}=${user.token}`;
    const refused = await t.http.post('/v1/auth/logout-all').set('Cookie', cookie).set('Origin', EVIL).expect(403);
    expect(refused.body.code).toBe('forbidden');
    expect(corsHeadersOf(refused.headers)).toEqual([]);
    const taken = await t.http.post('/v1/auth/logout-all').set('Cookie', cookie).set('Origin', ADMIN).expect(200);
    expect(taken.headers['access-control-allow-origin']).toBe(ADMIN);
  });
});
