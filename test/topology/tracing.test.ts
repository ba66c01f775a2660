// OpenTelemetry traces (issue 25, README "Traces"): the service as a real process exporting with
// the SDK's own OTLP/HTTP exporter (JSON protocol) to a receiver in this test, a real SMTP server
// and the real PostgreSQL and Redis. One sign-up carrying a W3C traceparent must give one trace:
// the request's server span named by its operationId under the caller's span, PostgreSQL and
// Redis spans, the mail job's attempt (run by the worker of the same process) continuing the
// request's trace, and the SMTP send under it; log lines carry the trace ids. With tracing off,
// nothing of OpenTelemetry is active and log lines carry none.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { context, trace, ProxyTracerProvider } from '@opentelemetry/api';
import knex, { type Knex } from 'knex';
import { cloneTemplateDatabase, databaseUrl, dropDatabase } from '../support/databases';
import { assertMatchesContract } from '../support/contract-validator';
import { TestSmtpServer } from '../support/smtp';
import { get, killAll, request, stopWithSigterm, waitFor, type Answer } from '../support/processes';
import { deploymentEnv, startInstance, type Instance } from '../support/topology';
import { tracingEnabled, tracingRequested } from '../../src/platform/tracing';

jest.setTimeout(120_000);

/** A span as OTLP/JSON carries it (ids in hex), with its resource's service.name. */
interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  service: string;
}

const SPAN_KIND = { SERVER: 2, CLIENT: 3, CONSUMER: 5 };

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type OtlpAttribute = { key: string; value: OtlpValue };
const valueOf = (v: OtlpValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue));
const attributesOf = (list: OtlpAttribute[] = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/** An OTLP/HTTP receiver: keeps every request body sent to /v1/traces (JSON, as the exporter's http/json protocol sends it). */
class OtlpReceiver {
  readonly bodies: string[] = [];
  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<OtlpReceiver> {
    const server = http.createServer();
    const self = new OtlpReceiver(server);
    server.on('request', (req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (d: string) => (body += d));
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/v1/traces' && String(req.headers['content-type']).startsWith('application/json')) self.bodies.push(body);
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return self;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  spans(): ReceivedSpan[] {
    return this.bodies.flatMap((body) =>
      (JSON.parse(body).resourceSpans ?? []).flatMap((rs: any) => {
        const service = String(attributesOf(rs.resource?.attributes)['service.name']);
        return (rs.scopeSpans ?? []).flatMap((ss: any) => (ss.spans ?? []).map((s: any) => ({ ...s, attributes: attributesOf(s.attributes), service })));
      }),
    );
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

let dbName: string;
let db: Knex;
let smtp: TestSmtpServer;
let receiver: OtlpReceiver;
let instance: Instance;

async function register(port: number, email: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await request(port, 'POST', '/v1/auth/register', { headers, body: { email, password: 'correct horse battery staple', transport: 'bearer' } });
  assertMatchesContract('POST', '/v1/auth/register', { ...res, text: JSON.stringify(res.body) } as any);
  expect(res.status).toBe(201);
  return res;
}

beforeAll(async () => {
  dbName = await cloneTemplateDatabase();
  db = knex({ client: 'pg', connection: databaseUrl(dbName), pool: { min: 0, max: 1 } });
  smtp = await TestSmtpServer.start();
  receiver = await OtlpReceiver.start();
});

afterAll(async () => {
  await killAll();
  await Promise.all([smtp.stop(), receiver.stop(), db.destroy()]);
  await dropDatabase(dbName);
});

describe('with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  beforeAll(async () => {
    instance = await startInstance(
      'traced',
      deploymentEnv(databaseUrl(dbName), {
        SMTP_URL: smtp.url,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100', // export within a tenth of a second, not five
      }),
    );
  });

  it('gives one trace from the request that enqueues a mail to the SMTP send of its job run, and log lines carry its ids', async () => {
    const traceId = hex(16);
    const callerSpanId = hex(8);
    const email = `traced-${hex(4)}@example.com`;
    const res = await register(instance.port, email, { traceparent: `00-${traceId}-${callerSpanId}-01` });
    await smtp.waitForMessage((m) => m.to.includes(email), 20_000);

    const inTrace = () => receiver.spans().filter((s) => s.traceId === traceId);
    // The SMTP span ends inside the job's, which ends before the batch is exported: wait for both.
    const job = await waitFor('the job span', () => inTrace().find((s) => s.name === 'job service.mail.send'), 20_000, instance.proc);
    const smtpSpan = await waitFor('the SMTP span', () => inTrace().find((s) => s.name === 'smtp send'), 20_000, instance.proc);
    const server = await waitFor('the server span', () => inTrace().find((s) => s.kind === SPAN_KIND.SERVER), 20_000, instance.proc);

    // The request's span: named by its operationId, under the caller's span (the incoming traceparent).
    expect(server.name).toBe('register');
    expect(server.parentSpanId).toBe(callerSpanId);
    expect(server.attributes['http.route']).toBe('/v1/auth/register');
    expect(server.attributes['http.response.status_code']).toBe(201);
    expect(server.service).toBe('tenant-api');
    // No client address or user agent: personal data (the access log line has them, found by request_id).
    expect(Object.keys(server.attributes).filter((k) => /^(client\.|network\.peer\.|user_agent\.)/.test(k))).toEqual([]);
    // PostgreSQL (the user and the run written in the request) and Redis (the hand-over to BullMQ).
    const spans = inTrace();
    const pg = spans.filter((s) => s.attributes['db.system'] === 'postgresql' || s.attributes['db.system.name'] === 'postgresql');
    const redis = spans.filter((s) => s.attributes['db.system'] === 'redis' || s.attributes['db.system.name'] === 'redis');
    expect(pg.length).toBeGreaterThan(0);
    expect(redis.length).toBeGreaterThan(0);
    // The job run continues the request's trace: its attempt's span is a child of the server span.
    expect(job.kind).toBe(SPAN_KIND.CONSUMER);
    expect(job.parentSpanId).toBe(server.spanId);
    expect(job.attributes['job.kind']).toBe('service.mail.send');
    // The send under the job, naming the server and nothing of the message; the job's own queries under it too.
    expect(smtpSpan.parentSpanId).toBe(job.spanId);
    expect(smtpSpan.kind).toBe(SPAN_KIND.CLIENT);
    expect(smtpSpan.attributes['server.port']).toBe(smtp.port);
    expect(pg.some((s) => s.parentSpanId === job.spanId)).toBe(true);
    // No personal data or secret in any span this process exported (addresses, passwords).
    expect(receiver.bodies.join('\n')).not.toContain(email);
    expect(receiver.bodies.join('\n')).not.toContain('correct horse');

    // Log lines: the access log of the request and the job's completion, each with its span.
    const requestId = String(res.headers['x-request-id']);
    const accessLine = await waitFor('the access log line', () => instance.proc.logs().find((l) => l.message === 'request' && l.request_id === requestId), 5_000, instance.proc);
    expect(accessLine).toMatchObject({ trace_id: traceId, span_id: server.spanId });
    const runId = Number(job.attributes['job.run_id']);
    const completed = await waitFor('the job completed line', () => instance.proc.logs().find((l) => l.message === 'job completed' && l.run_id === runId), 5_000, instance.proc);
    expect(completed).toMatchObject({ trace_id: traceId, span_id: job.spanId });
    // What the worker continued: the traceparent stored with the run, the request's span.
    expect(await db('job_runs').where({ id: runId }).first()).toMatchObject({ request_id: requestId, traceparent: `00-${traceId}-${server.spanId}-01` });
  });

  /** The server span of a request this test sent, found through the trace_id of its access log line. */
  async function serverSpanOf(res: Answer): Promise<ReceivedSpan> {
    const requestId = String(res.headers['x-request-id']);
    const line = await waitFor('the access log line', () => instance.proc.logs().find((l) => l.message === 'request' && l.request_id === requestId), 5_000, instance.proc);
    expect(line.trace_id).toMatch(/^[0-9a-f]{32}$/);
    return waitFor('its server span', () => receiver.spans().find((s) => s.traceId === line.trace_id && s.kind === SPAN_KIND.SERVER), 10_000, instance.proc);
  }

  it('names the span of a request that matches no operation by its method only, and starts a trace without a traceparent', async () => {
    const res = await get(instance.port, '/v1/no-such-thing');
    expect(res.status).toBe(404);
    const span = await serverSpanOf(res);
    expect(span.name).toBe('GET unmatched');
    expect(span.parentSpanId || undefined).toBeUndefined();
    expect(span.attributes['http.route']).toBeUndefined();
  });

  it("keeps an OAuth callback's code and state out of the span", async () => {
    const res = await get(instance.port, '/v1/auth/provider_a/callback?code=sekrit-code&state=sekrit-state');
    assertMatchesContract('GET', '/v1/auth/provider_a/callback', { ...res, text: JSON.stringify(res.body) } as any);
    const span = await serverSpanOf(res);
    expect(span.name).toBe('providerACallback');
    expect(String(span.attributes['url.query'])).toContain('code=');
    expect(receiver.bodies.join('\n')).not.toContain('sekrit');
  });
});

describe('on shutdown', () => {
  it('exports the spans still buffered before the process exits', async () => {
    // Batches every minute: only the shutdown's flush can deliver this request's span in time.
    const env = deploymentEnv(databaseUrl(dbName), {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '60000',
      SHUTDOWN_DELAY_MS: '0',
    });
    const late = await startInstance('late', env);
    const traceId = hex(16);
    const res = await request(late.port, 'GET', '/v1/ping', { headers: { traceparent: `00-${traceId}-${hex(8)}-01` } });
    expect(res.status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.spans().filter((s) => s.traceId === traceId)).toEqual([]);
    const exit = await stopWithSigterm(late.proc, 30_000);
    expect(exit.code).toBe(0);
    expect(receiver.spans().filter((s) => s.traceId === traceId).map((s) => s.name)).toEqual(['ping']);
  });
});

describe('with no OTEL_* variable', () => {
  it('the environment decides: an endpoint or an exporter turns tracing on; none, or OTEL_SDK_DISABLED, keeps it off', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(false);
    expect(tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(false);
  });

  it('registers no tracer provider, span processor or context manager, and patches nothing (this process, which loaded the module)', () => {
    expect(process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? process.env.OTEL_TRACES_EXPORTER ?? process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).toBeUndefined();
    expect(tracingEnabled).toBe(false);
    // The API's global provider is its proxy with no delegate: spans are non-recording no-ops.
    const provider = trace.getTracerProvider();
    expect(provider).toBeInstanceOf(ProxyTracerProvider);
    expect((provider as ProxyTracerProvider).getDelegate().constructor.name).toBe('NoopTracerProvider');
    const span = trace.getTracer('probe').startSpan('probe');
    expect(span.isRecording()).toBe(false);
    // No context manager: a span set as active is not seen inside (the no-op manager keeps none).
    const seen = context.with(trace.setSpan(context.active(), span), () => trace.getActiveSpan());
    expect(seen).toBeUndefined();
    // No instrumentation wrapped pg's or ioredis's methods (shimmer marks what it wraps).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const pg = require('pg');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const ioredis = require('ioredis');
    expect((pg.Client.prototype.query as { __wrapped?: boolean }).__wrapped).toBeUndefined();
    expect((ioredis.Redis.prototype.sendCommand as { __wrapped?: boolean }).__wrapped).toBeUndefined();
  });

  it('a service started without them exports nothing and writes no trace ids in its log lines', async () => {
    const plain = await startInstance('plain', deploymentEnv(databaseUrl(dbName), { SMTP_URL: smtp.url }));
    const bodies = receiver.bodies.length;
    const email = `plain-${hex(4)}@example.com`;
    const res = await register(plain.port, email, { traceparent: `00-${hex(16)}-${hex(8)}-01` });
    await smtp.waitForMessage((m) => m.to.includes(email), 20_000);
    const requestId = String(res.headers['x-request-id']);
    const completed = await waitFor('the job completed line', () => plain.proc.logs().find((l) => l.message === 'job completed'), 10_000, plain.proc);
    const lines = plain.proc.logs();
    expect(lines.find((l) => l.message === 'request' && l.request_id === requestId)).toBeDefined();
    expect(lines.filter((l) => 'trace_id' in l || 'span_id' in l)).toEqual([]);
    expect(receiver.bodies.length).toBe(bodies);
    // And the run it enqueued stores no traceparent.
    expect(await db('job_runs').where({ id: completed.run_id }).first()).toMatchObject({ request_id: requestId, traceparent: null });
    await stopWithSigterm(plain.proc, 30_000);
  });
});
