// Large answers (the contract, the Redoc bundle) are compressed as Accept-Encoding negotiates (br
// preferred, then gzip), with Vary: Accept-Encoding; small ones, and answers that carry credentials
// (no-store), go as they are. The static ones are compressed once ahead (src/http/precompressed.ts),
// so they carry their Content-Length, and HEAD answers with the headers of the same GET.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { createSession } from '../../src/sessions/store';

let t: TestApp;
let server: http.Server;
let port: number;
beforeAll(async () => {
  t = await startTestApp();
  server = http.createServer(t.server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await t?.close();
});

/** A raw request: the body as sent (supertest would decode it). */
function fetchRaw(path: string, headers: Record<string, string>, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

const decoders: Record<string, (b: Buffer) => Buffer> = { br: zlib.brotliDecompressSync, gzip: zlib.gunzipSync };

describe.each(['/openapi.json', '/openapi.yaml', '/docs/redoc.standalone.js'])('%s', (path) => {
  let identity: Buffer;
  beforeAll(async () => {
    const res = await fetchRaw(path, { 'Accept-Encoding': 'identity' });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
    identity = res.body;
    expect(identity.length).toBeGreaterThan(10_000);
  });

  it.each([
    ['br', 'br'],
    ['gzip', 'gzip'],
    ['gzip, deflate, br', 'br'],
    ['gzip;q=1, br;q=0.5', 'gzip'],
  ])('Accept-Encoding: %s → %s', async (accept, expected) => {
    const res = await fetchRaw(path, { 'Accept-Encoding': accept });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe(expected);
    expect(res.headers.vary).toMatch(/\bAccept-Encoding\b/);
    // Compressed once ahead of time, so its length is known.
    expect(Number(res.headers['content-length'])).toBe(res.body.length);
    expect(res.body.length).toBeLessThan(identity.length / 2);
    expect(decoders[expected]!(res.body).equals(identity)).toBe(true);
  });

  it('is sent as it is without Accept-Encoding', async () => {
    const res = await fetchRaw(path, {});
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.body.equals(identity)).toBe(true);
  });

  it('answers HEAD with the headers of the same GET, and no body', async () => {
    const get = await fetchRaw(path, { 'Accept-Encoding': 'gzip, br' });
    const head = await fetchRaw(path, { 'Accept-Encoding': 'gzip, br' }, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-encoding']).toBe('br');
    expect(head.headers['content-length']).toBe(get.headers['content-length']);
    expect(head.body.length).toBe(0);
    const plain = await fetchRaw(path, {}, 'HEAD');
    expect(Number(plain.headers['content-length'])).toBe(identity.length);
  });
});

it('leaves small answers uncompressed', async () => {
  const res = await fetchRaw('/v1/ping', { 'Accept-Encoding': 'gzip, br' });
  expect(res.status).toBe(200);
  expect(res.body.length).toBeLessThan(1024);
  expect(res.headers['content-encoding']).toBeUndefined();
  expect(JSON.parse(res.body.toString())).toBeTruthy();
});

it('never compresses answers that carry credentials (no-store), however large', async () => {
  const user = await signedInUser(t.ctx);
  // Enough sessions for a list over the threshold.
  for (let i = 0; i < 10; i++) await createSession(t.ctx.db, { userId: user.userId, transport: 'bearer', userAgent: 'A'.repeat(300) }, t.ctx.config.session, t.ctx.now());
  const res = await fetchRaw('/v1/auth/sessions?limit=200', { 'Accept-Encoding': 'gzip, br', Authorization: user.auth });
  expect(res.status).toBe(200);
  expect(res.body.length).toBeGreaterThan(4 * 1024);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers['content-encoding']).toBeUndefined();
});
