// The status line's reason phrase and a Problem's `title` are the RFC 9110 phrase of the status,
// the same in both, on every answer (Node 20 still names 413 and 422 as RFC 7231 did).
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Response } from 'supertest';
import { startTestApp, type TestApp } from '../support/test-app';

/** The phrase of the status line as received (supertest keeps Node's response as `res`). */
const phraseOf = (res: Response) => (res as unknown as { res: IncomingMessage }).res.statusMessage;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

it('says "Unprocessable Content" for 422, in the status line and the title', async () => {
  const res = await t.http.post('/v1/echo').send({}).expect(422);
  expect(phraseOf(res)).toBe('Unprocessable Content');
  expect(res.body.title).toBe('Unprocessable Content');
});

it('says "Content Too Large" for 413, in the status line and the title', async () => {
  const res = await t.http
    .post('/v1/auth/login')
    .set('Content-Type', 'application/json')
    .send(JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(1024 * 1024 + 1) }))
    .expect(413);
  expect(phraseOf(res)).toBe('Content Too Large');
  expect(res.body.title).toBe('Content Too Large');
});

it('gives every answer, Problem or not, the phrase of its status', async () => {
  const answers = await Promise.all([
    t.http.get('/v1/ping').expect(200),
    t.http.get('/v1/nothing-here').expect(404),
    t.http.delete('/v1/ping').expect(405),
    t.http.get('/v1/auth/me').expect(401),
    t.http.post('/v1/echo').set('Content-Type', 'application/json').send('{"a":').expect(400),
  ]);
  for (const res of answers) {
    expect({ status: res.status, phrase: phraseOf(res) }).toEqual({ status: res.status, phrase: STATUS_CODES[res.status] });
    if (res.status >= 400) expect({ status: res.status, title: res.body.title }).toEqual({ status: res.status, title: phraseOf(res) });
  }
});
