// Prometheus metrics (prom-client), one registry per instance: tests run several instances in one
// process, so nothing goes to prom-client's global registry. Counters and histograms are updated
// in place as requests finish; the text format is written only when Prometheus scrapes
// (`metricsServer`, on METRICS_PORT: a listener of its own, never the public one).
import http from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** An API's latencies: 1 ms to 10 s. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  readonly registry = new Registry();

  /** Requests by operationId (never a raw path: the label stays bounded), method and status class. */
  readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by operation (operationId, or "unmatched"), method and status class.',
    labelNames: ['operation', 'method', 'status_class'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from the request to the end of its answer, by operation.',
    labelNames: ['operation'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly httpInFlight = new Gauge({
    name: 'http_requests_in_flight',
    help: 'Requests being answered now.',
    registers: [this.registry],
  });

  /** Default process metrics (CPU, memory, event loop lag, handles) only where something scrapes them. */
  collectProcessMetrics(): void {
    collectDefaultMetrics({ register: this.registry });
  }
}

/** GET /metrics in the Prometheus text format; everything else 404. */
export function metricsServer(metrics: Metrics): http.Server {
  return http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
}
