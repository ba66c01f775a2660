// A PostgreSQL of the test's own, frozen with SIGSTOP (a VM paused, a partition: connections open,
// nothing answers) and killed: every request that needs it answers 503 `unavailable` with
// Retry-After within the configured bound, never 401 for a valid session nor 500; the service
// recovers without a restart; the outage is logged once when it starts and once when it ends.
import { capturingLogger, linesWith } from '../support/logs';
import { expectUnavailableWithin, timed } from '../support/outages';
import { PrivatePostgres } from '../support/private-servers';
import { startTestApp, type TestApp } from '../support/test-app';
import { waitFor } from '../support/wait';

const PASSWORD = 'correct horse battery staple';
const BOUND_MS = 500;

let pg: PrivatePostgres;
let t: TestApp;
const logs: string[] = [];
let email: string;
let auth: string;

beforeAll(async () => {
  pg = await PrivatePostgres.start();
  t = await startTestApp(
    { LOG_LEVEL: 'debug', BCRYPT_COST: '4', DATABASE_CONNECT_TIMEOUT_MS: String(BOUND_MS), DATABASE_QUERY_TIMEOUT_MS: String(BOUND_MS) },
    { databaseUrl: pg.url, logger: capturingLogger(logs) },
  );
  email = `outage-${Date.now()}@example.com`;
  const res = await t.http.post('/v1/auth/register').send({ email, password: PASSWORD, transport: 'bearer' }).expect(201);
  auth = `Bearer ${res.body.token}`;
}, 60_000);

afterAll(async () => {
  pg.resume();
  await t?.close();
  await pg?.destroy();
});

const requests = () => [
  timed(() => t.http.get('/v1/auth/me').set('Authorization', auth)),
  timed(() => t.http.get('/v1/auth/sessions').set('Authorization', auth)),
  timed(() => t.http.get('/v1/orgs').set('Authorization', auth)),
  timed(() => t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' })),
];

async function recovered() {
  await waitFor('the service to answer again', async () => (await t.http.get('/v1/auth/me').set('Authorization', auth)).status === 200, 20_000);
  await t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' }).expect(200);
}

it('frozen (SIGSTOP): 503 within the bound, never 401 or 500, back without a restart, logged once each way', async () => {
  // Pooled connections exist (the frozen server keeps them open): the query timeout must fire.
  await Promise.all([1, 2, 3].map(() => t.http.get('/v1/auth/me').set('Authorization', auth).expect(200)));
  logs.length = 0;
  pg.pause();
  try {
    expectUnavailableWithin(BOUND_MS, await Promise.all(requests()));
    // Later requests: the stuck connections were dropped, new ones cannot be opened.
    expectUnavailableWithin(BOUND_MS, await Promise.all(requests()));
  } finally {
    pg.resume();
  }
  await recovered();

  const down = linesWith(logs, 'dependency down: requests that need it answer 503 until it is back');
  expect(down.map((l) => l.dependency)).toEqual(['database']);
  await waitFor('the outage to be logged as over', async () => linesWith(logs, 'dependency back').length > 0);
  const back = linesWith(logs, 'dependency back');
  expect(back).toHaveLength(1);
  expect(back[0]).toMatchObject({ dependency: 'database' });
  expect(back[0]!.refused_requests).toBeGreaterThanOrEqual(8);
  expect(back[0]!.outage_ms).toBeGreaterThan(0);
  // No stack per refused request.
  expect(linesWith(logs, 'request failed')).toEqual([]);
}, 60_000);

it('killed, then started again: 503 at once while it is gone, back without a restart', async () => {
  await pg.kill();
  try {
    expectUnavailableWithin(BOUND_MS, await Promise.all(requests()));
  } finally {
    await pg.start();
  }
  await recovered();
}, 60_000);
