// Headers too large: Node refuses them before Express sees the request (HPE_HEADER_OVERFLOW); the
// service's HTTP server answers 431 with a Problem and a request id, like any other error, and
// closes the connection. Run through the real application and server, with a real request.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Response } from 'supertest';
import { startTestApp, type TestApp } from '../support/test-app';
import { createHttpServer } from '../../src/http/server';
import { assertMatchesContract } from '../support/contract-validator';

let t: TestApp;
let server: http.Server;
let port: number;
beforeAll(async () => {
  t = await startTestApp();
  server = createHttpServer(t.server, t.ctx.config, t.ctx.logger);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await t?.close();
});

function get(path: string, headers: Record<string, string>) {
  return new Promise<{ status: number; phrase: string; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, phrase: res.statusMessage!, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

it('answers a 20 KiB header with 431, a Problem naming the limit, a request id, and Connection: close', async () => {
  expect(http.maxHeaderSize).toBe(16 * 1024);
  const res = await get('/v1/ping', { 'X-Big': 'a'.repeat(20 * 1024) });
  expect(res.status).toBe(431);
  expect(res.phrase).toBe('Request Header Fields Too Large');
  expect(res.headers['content-type']).toBe('application/problem+json');
  expect(res.headers.connection).toBe('close');
  const problem = JSON.parse(res.text);
  expect(problem).toEqual({
    type: 'about:blank',
    title: 'Request Header Fields Too Large',
    status: 431,
    detail: 'The request headers are larger than 16 KiB.',
    code: 'request_header_fields_too_large',
    request_id: expect.stringMatching(/^req_/),
  });
  expect(res.headers['x-request-id']).toBe(problem.request_id);
  // As the contract describes it: no operation answers it, the shared response (x-status 431) does.
  assertMatchesContract('get', '/', { status: res.status, headers: res.headers, body: problem, text: res.text } as unknown as Response);
});

it('answers headers under the limit as usual', async () => {
  const res = await get('/v1/ping', { 'X-Big': 'a'.repeat(10 * 1024) });
  expect(res.status).toBe(200);
});
