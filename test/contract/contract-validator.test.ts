// The test client's response validator itself: what it refuses, on hand-made responses.
import type { Response } from 'supertest';
import { assertMatchesContract } from '../support/contract-validator';

const REQUEST_ID = 'req_01jd8x4k3m5n6p7q8r9s0t1v2w';

function problem(status: number, code: string, headers: Record<string, string> = {}): Response {
  const body = { type: 'about:blank', title: 'Error', status, detail: 'Something.', code, request_id: REQUEST_ID };
  return {
    status,
    headers: { 'x-request-id': REQUEST_ID, 'content-type': 'application/problem+json; charset=utf-8', ...headers },
    body,
    text: JSON.stringify(body),
  } as unknown as Response;
}

it('accepts a Problem whose code the response lists, and refuses any other code', () => {
  expect(() => assertMatchesContract('get', '/v1/ping', problem(500, 'internal'))).not.toThrow();
  expect(() => assertMatchesContract('get', '/v1/ping', problem(500, 'database_exploded'))).toThrow(/"database_exploded" is not among the codes of ping 500 \(internal\)/);
  const limited = problem(429, 'rate_limited', { 'retry-after': '30', 'cache-control': 'no-store' });
  expect(() => assertMatchesContract('post', '/v1/auth/login', limited)).not.toThrow();
  expect(() => assertMatchesContract('post', '/v1/auth/login', problem(429, 'slow_down', { 'retry-after': '30', 'cache-control': 'no-store' }))).toThrow(/not among the codes of login 429 \(rate_limited\)/);
});

it('checks answers no operation gives against the shared response of their status (x-status)', () => {
  expect(() => assertMatchesContract('get', '/nowhere', problem(404, 'not_found'))).not.toThrow();
  expect(() => assertMatchesContract('get', '/nowhere', problem(404, 'gone'))).toThrow(/not among the codes of components\/responses\/NotFound \(not_found\)/);
  expect(() => assertMatchesContract('patch', '/v1/ping', problem(405, 'method_not_allowed', { allow: 'GET' }))).not.toThrow();
  expect(() => assertMatchesContract('patch', '/v1/ping', problem(405, 'method_not_allowed'))).toThrow(/required header Allow missing/);
  expect(() => assertMatchesContract('get', '/nowhere', problem(410, 'gone'))).toThrow(/no shared response has x-status 410/);
});

it('requires Cache-Control: no-store under /v1/auth/ and /ops/', () => {
  expect(() => assertMatchesContract('get', '/v1/auth/me', problem(401, 'unauthenticated'))).toThrow(/not no-store/);
  expect(() => assertMatchesContract('get', '/v1/auth/me', problem(401, 'unauthenticated', { 'cache-control': 'no-store' }))).not.toThrow();
  expect(() => assertMatchesContract('get', '/ops/nowhere', problem(404, 'not_found'))).toThrow(/not no-store/);
});
