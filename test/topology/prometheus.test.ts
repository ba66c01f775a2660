// Metrics as a real Prometheus (Debian's package) consumes them: two instances, each serving
// GET /metrics on a listener of its own, scraped every second after real traffic; then
// Prometheus' own HTTP API answers the questions operators ask (requests per operation across
// instances, a latency quantile). Parsing our text with our own code would prove nothing.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from '../support/test-app';
import { freePort } from '../support/ports';
import { waitFor } from '../support/wait';
import { metricsServer } from '../../src/platform/metrics';
import { answersInFlight, createHttpServer } from '../../src/http/server';
import { answerObserver } from '../../src/http/request-metrics';
import { TestSmtpServer } from '../support/smtp';
import { PASSWORD, uniqueEmail } from '../support/accounts';

const PROMETHEUS = '/usr/bin/prometheus';
jest.setTimeout(90_000);

interface Instance {
  t: TestApp;
  api: http.Server;
  metrics: http.Server;
}

const listen = (server: http.Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
const close = (server: http.Server) => new Promise<void>((resolve) => server.close(() => resolve()));

let instances: Instance[] = [];
let smtp: TestSmtpServer | null = null;
let prometheus: ChildProcess | null = null;
let dir = '';
let promUrl = '';

async function query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  if (body.status !== 'success') throw new Error(`query ${expr}: ${JSON.stringify(body)}`);
  return body.data.result;
}

beforeAll(async () => {
  if (!fs.existsSync(PROMETHEUS)) throw new Error(`No Prometheus at ${PROMETHEUS}: install Debian's prometheus (apt-get install -y prometheus); .ci/run does`);
  smtp = await TestSmtpServer.start();
  for (let i = 0; i < 2; i++) {
    // METRICS_PORT turns the counting on (main.ts listens on it; here the test makes the listener).
    // The first instance runs the job workers and mails through a real SMTP server; the second has
    // no workers, so what it enqueues stays in its queue and its outbox.
    const t = i === 0
      ? await startTestApp({ METRICS_PORT: '0', SMTP_URL: smtp.url, RATE_LIMIT_LOGIN_PER_MINUTE: '3' }, { workers: true })
      : await startTestApp({ METRICS_PORT: '0' });
    // The server main.ts makes: it counts each answer when its connection is done with it.
    const api = createHttpServer(t.server, t.ctx.config, t.ctx.logger, answerObserver(t.ctx));
    t.ctx.metrics.readInFlight(() => answersInFlight(api));
    const metrics = metricsServer(t.ctx.metrics);
    t.ctx.metrics.collectProcessMetrics(); // as main.ts does when it opens the listener
    instances.push({ t, api, metrics });
  }
  const targets: string[] = [];
  for (const instance of instances) {
    await listen(instance.api);
    targets.push(`127.0.0.1:${await listen(instance.metrics)}`);
  }
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prometheus-'));
  const config = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(
    config,
    ['global:', '  scrape_interval: 1s', 'scrape_configs:', '  - job_name: api', '    static_configs:', `      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]`, ''].join('\n'),
  );
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn(PROMETHEUS, [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { stdio: 'ignore' });
  await waitFor('Prometheus ready', async () => (await fetch(`${promUrl}/-/ready`).catch(() => null))?.ok, 30_000);
});

afterAll(async () => {
  prometheus?.kill('SIGKILL');
  for (const { t, api, metrics } of instances) {
    await Promise.all([close(api), close(metrics)]);
    await t.close();
  }
  instances = [];
  await smtp?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

it('counts every request by operation across two instances, and answers a latency quantile', async () => {
  const sent = [7, 5];
  for (const [i, n] of sent.entries()) {
    const port = (instances[i]!.api.address() as AddressInfo).port;
    for (let k = 0; k < n; k++) expect((await fetch(`http://127.0.0.1:${port}/v1/ping`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/v1/no-such-path`)).status).toBe(404);
  }

  // Both targets up, then the counts Prometheus scraped equal what was sent, per instance and in sum.
  await waitFor('both targets scraped', async () => (await query('sum(up{job="api"})'))[0]?.value[1] === '2', 20_000);
  const perInstance = await waitFor(
    'the pings scraped',
    async () => {
      const rows = await query('http_requests_total{operation="ping",method="GET",status_class="2xx"}');
      const counts = rows.map((r) => Number(r.value[1])).sort((a, b) => b - a);
      return counts.length === 2 && counts[0] === 7 && counts[1] === 5 ? counts : null;
    },
    20_000,
  );
  expect(perInstance).toEqual([7, 5]);
  expect(Number((await query('sum(http_requests_total{operation="ping"})'))[0]!.value[1])).toBe(12);
  // An unknown path is one bounded series, not a series per path.
  expect(Number((await query('sum(http_requests_total{operation="unmatched",status_class="4xx"})'))[0]!.value[1])).toBe(2);

  // A quantile over both instances' histograms: a number of seconds within the buckets.
  const p99 = await waitFor(
    'a p99 of ping',
    async () => {
      const [row] = await query('histogram_quantile(0.99, sum by (le) (http_request_duration_seconds_bucket{operation="ping"}))');
      const value = row ? Number(row.value[1]) : NaN;
      return Number.isFinite(value) ? value : null;
    },
    20_000,
  );
  expect(p99).toBeGreaterThan(0);
  expect(p99).toBeLessThanOrEqual(10);
  // Nothing is in flight once every answer is written.
  expect((await query('sum(http_requests_in_flight)'))[0]!.value[1]).toBe('0');
});

const send = (i: number, method: string, path: string, body?: unknown) =>
  fetch(`http://127.0.0.1:${(instances[i]!.api.address() as AddressInfo).port}${path}`, {
    method,
    headers: body ? { 'Content-Type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });

/** One number Prometheus answers for `expr` once it equals `expected` (scrapes come every second). */
async function settles(expr: string, expected: number): Promise<void> {
  let last: string | undefined;
  try {
    await waitFor(
      `${expr} = ${expected}`,
      async () => {
        const rows = await query(expr);
        last = rows.map((r) => r.value[1]).join(', ');
        return rows.length === 1 && Number(rows[0]!.value[1]) === expected;
      },
      20_000,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last answer: [${last ?? ''}]`);
  }
}

it('counts sign-ins, 429s by limit, mail, job runs, queue depth, the outbox, the pool and the dependencies', async () => {
  // Instance 0 (workers, SMTP): a registration mails a code through a job; one sign-in succeeds,
  // two fail, and the next is refused: 3 attempts a minute per IP (a right password is given back
  // to the per-address limit only).
  const email = uniqueEmail('metrics');
  expect((await send(0, 'POST', '/v1/auth/register', { email, password: PASSWORD })).status).toBe(201);
  await smtp!.waitForMessage((m) => m.to.includes(email));
  expect((await send(0, 'POST', '/v1/auth/login', { email, password: PASSWORD })).status).toBe(200);
  for (let k = 0; k < 2; k++) expect((await send(0, 'POST', '/v1/auth/login', { email, password: 'not the password' })).status).toBe(401);
  expect((await send(0, 'POST', '/v1/auth/login', { email, password: 'not the password' })).status).toBe(429);
  // Instance 1 (no workers): two registrations leave two mail runs waiting in BullMQ and in the outbox.
  for (let k = 0; k < 2; k++) expect((await send(1, 'POST', '/v1/auth/register', { email: uniqueEmail('queued'), password: PASSWORD })).status).toBe(201);
  const [first, second] = instances.map((i) => `127.0.0.1:${(i.metrics.address() as AddressInfo).port}`);

  await settles('sum(sign_ins_total{method="password",outcome="succeeded"})', 1);
  await settles('sum(sign_ins_total{method="password",outcome="failed"})', 2);
  await settles('sum(http_rate_limited_total{limit="login.ip"})', 1);
  await settles('sum(mail_messages_total{outcome="sent"})', 1);
  await settles(`job_runs_finished_total{instance="${first}",kind="service.mail.send",state="completed"}`, 1);
  await settles(`job_run_duration_seconds_count{instance="${first}",kind="service.mail.send"}`, 1);
  // Read at scrape time from the second instance's Redis queue and job_runs.
  await settles(`job_queue_depth{instance="${second}",queue="mail",state="waiting"}`, 2);
  await settles(`job_queue_depth{instance="${first}",queue="mail",state="waiting"}`, 0);
  await settles(`job_outbox_backlog{instance="${second}"}`, 2);
  await settles(`job_outbox_backlog{instance="${first}"}`, 0);
  // The test app's clock stands still: moved on 90 s, the oldest run has been due that long.
  instances[1]!.t.clock.advance(90_000);
  await settles(`job_outbox_oldest_age_seconds{instance="${second}"}`, 90);
  await settles(`job_outbox_oldest_age_seconds{instance="${first}"}`, 0);
  // Both dependencies up on both instances, never down; each pool seen.
  await settles('sum(dependency_up)', 4);
  await settles('sum(dependency_outage_seconds_total)', 0);
  await settles('count(db_pool_connections_idle)', 2);
  await settles('count(db_pool_requests_waiting)', 2);
  await settles('sum(db_query_errors_total{reason="unavailable"})', 0);
  await settles('count(redis_command_errors_total)', 4);
});

it('the Grafana dashboard (deploy/grafana) asks only valid queries, of metrics the instances serve', async () => {
  const dashboard = JSON.parse(fs.readFileSync(path.join(__dirname, '../../deploy/grafana/tenant-api.json'), 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] };
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
  expect(exprs.length).toBeGreaterThan(15);
  const served = await (await fetch(`http://127.0.0.1:${(instances[0]!.metrics.address() as AddressInfo).port}/metrics`)).text();
  for (const { panel, expr } of exprs) {
    // Grafana's variables as Grafana would fill them in.
    const filled = expr.replaceAll('$__rate_interval', '1m').replaceAll('$job', '.*');
    await expect(query(filled).then(() => 'ok')).resolves.toBe('ok');
    for (const [, name] of filled.matchAll(/([a-z_][a-z0-9_]*)\{/g)) {
      if (['by', 'sum', 'max', 'min', 'rate', 'increase', 'topk', 'histogram_quantile'].includes(name!)) continue;
      expect({ panel, metric: name, served: served.includes(`# TYPE ${name!.replace(/_(bucket|count|sum)$/, '')} `) }).toEqual({ panel, metric: name, served: true });
    }
  }
});

it('counts nothing without METRICS_PORT: the request path has no metrics work at all', async () => {
  const t = await startTestApp();
  try {
    expect(t.ctx.config.metricsPort).toBeNull();
    expect(answerObserver(t.ctx)).toBeUndefined();
    const api = createHttpServer(t.server, t.ctx.config, t.ctx.logger, answerObserver(t.ctx));
    const port = await listen(api);
    expect((await fetch(`http://127.0.0.1:${port}/v1/ping`)).status).toBe(200);
    await close(api);
    const text = await t.ctx.metrics.registry.metrics();
    expect(text).toContain('# TYPE http_requests_total counter');
    expect(text).not.toMatch(/^http_requests_total\{/m);
    expect(text).not.toMatch(/^http_request_duration_seconds_count\{/m);
  } finally {
    await t.close();
  }
});
