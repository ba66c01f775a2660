// The OpenTelemetry SDK as this service runs it, loaded by tracing.ts only when tracing is on.
//
// NodeSDK picks the exporter from the environment (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_*:
// protocol, endpoint, headers), the sampler (OTEL_TRACES_SAMPLER, parent-based by default) and the
// resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES); we add what it cannot know: traces only
// (metrics are Prometheus's, logs go to stdout), the W3C propagator, which libraries to instrument,
// and how to name a request's span.
//
// Nothing personal or secret leaves in clear: a request's span has no client address or user agent
// (its request_id finds them in the access log, which stays with the operator), the OAuth
// callback's `code` and `state` are redacted from url.query, Redis spans carry the command name
// only (keys name IPs and accounts, BullMQ's scripts carry job data), PostgreSQL spans the
// statement text (values are bound parameters, never recorded), and the SMTP span
// (src/mail/mailer.ts) names the server, not the message.
import { context, isSpanContextValid, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_HTTP_ROUTE, ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';

/** Probes and scrapes, every few seconds from every balancer and Prometheus: no trace. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** Set over the http instrumentation's attributes of a request's span: undefined drops them (see above). */
const PERSONAL_ATTRIBUTES = { 'client.address': undefined, 'network.peer.address': undefined, 'network.peer.port': undefined, 'user_agent.original': undefined };

/** The default query parameters to redact, and the OAuth callback's. */
const REDACTED_QUERY_PARAMS = ['sig', 'Signature', 'AWSAccessKeyId', 'X-Goog-Signature', 'code', 'state'];

const KINDS = { internal: SpanKind.INTERNAL, consumer: SpanKind.CONSUMER, client: SpanKind.CLIENT } as const;

/**
 * A server span is named by the operationId the router matched (res.locals, set by
 * src/http/router.ts) and given the contract's path template as http.route; a request that matched
 * no operation keeps a bounded name ("GET unmatched"), never its raw path. Runs as the response closes.
 */
function nameServerSpan(span: Span, request: IncomingMessage | ClientRequest, response: ServerResponse | IncomingMessage): void {
  const locals = (response as { locals?: { operationId?: string; route?: string } }).locals;
  if (!locals) return; // a client span (outgoing request): its instrumentation named it
  if (locals.operationId) {
    span.updateName(locals.operationId);
    if (locals.route) span.setAttribute(ATTR_HTTP_ROUTE, locals.route);
  } else {
    span.updateName(`${request.method ?? 'GET'} unmatched`);
  }
}

/**
 * Starts the SDK and answers what tracing.ts calls.
 * @public tracing.ts requires this module only when tracing is on, a require knip does not follow.
 */
export function startTracing() {
  const w3c = new W3CTraceContextPropagator();
  const sdk = new NodeSDK({
    // The env detector (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) is merged over this default.
    resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'tenant-api' })),
    // Traces only: without these NodeSDK would also start OTLP metric and log exporters.
    metricReaders: [],
    logRecordProcessors: [],
    // Registered as the global propagator: the http instrumentation reads an incoming traceparent
    // with it. W3C traceparent is the contract with callers and with stored job runs, whatever
    // OTEL_PROPAGATORS says.
    textMapPropagator: w3c,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?', 1)[0]!),
        startIncomingSpanHook: () => PERSONAL_ATTRIBUTES,
        applyCustomAttributesOnSpan: nameServerSpan,
        redactedQueryParamsServer: REDACTED_QUERY_PARAMS,
      }),
      new UndiciInstrumentation(), // fetch: openid-client towards the social providers
      // Only inside a request or a job: pollers, heartbeats and BullMQ's blocking reads would
      // otherwise each make a trace of their own every few seconds.
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
    ],
  });
  sdk.start();
  const tracer = trace.getTracer('tenant-api');

  return {
    currentTraceparent(): string | null {
      const carrier: Record<string, string> = {};
      w3c.inject(context.active(), carrier, { set: (c, k, v) => (c[k] = v) });
      return carrier.traceparent ?? null;
    },

    inSpan<T>(
      name: string,
      opts: { kind?: keyof typeof KINDS; parent?: string | null; attributes?: Record<string, string | number | boolean> },
      fn: () => Promise<T>,
    ): Promise<T> {
      // A stored traceparent (a job run's) is the parent; a malformed one is ignored (a new trace).
      const parent = opts.parent ? w3c.extract(ROOT_CONTEXT, { traceparent: opts.parent }, { get: (c, k) => c[k], keys: (c) => Object.keys(c) }) : context.active();
      return tracer.startActiveSpan(name, { kind: KINDS[opts.kind ?? 'internal'], attributes: opts.attributes }, parent, async (span) => {
        try {
          return await fn();
        } catch (err) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
          throw err;
        } finally {
          span.end();
        }
      });
    },

    addTraceIds(info: Record<string, unknown>): void {
      const ids = trace.getSpanContext(context.active());
      if (!ids || !isSpanContextValid(ids)) return;
      info.trace_id = ids.traceId;
      info.span_id = ids.spanId;
    },

    shutdown: () => sdk.shutdown(),
  };
}

export type TracingSdk = ReturnType<typeof startTracing>;
