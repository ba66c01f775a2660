// Prometheus metrics (prom-client), one registry per instance: tests run several instances in one
// process, so nothing goes to prom-client's global registry. Counters and histograms are updated
// in place where things happen (no query, no Redis call per request); what lives elsewhere (pool
// sizes, dependency states, queue depths, the outbox) is read when Prometheus scrapes, through
// the readers the composition root gives `observe`, the slow ones behind a short cache. The text
// format is written only on a scrape (`metricsServer`, on METRICS_PORT: a listener of its own,
// never the public one). README "Metrics" says what each one means.
import http from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** An API's latencies: 1 ms to 10 s. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** A job attempt's: 5 ms to 15 minutes (a kind's timeout may be long). */
const JOB_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];

/** A job attempt's end, as workers.ts records it. */
export type RunOutcome = 'completed' | 'retryable' | 'discarded' | 'cancelled';

/** What a scrape reads from the parts that hold it (src/app-context-factory.ts wires them). */
export interface MetricReaders {
  pool: () => { used: number; free: number; pending: number };
  /** Each dependency: whether it answers now, and its seconds of outage since start. */
  dependencies: () => { name: string; up: boolean; outageSeconds: number }[];
  queueDepths: () => Promise<{ queue: string; waiting: number; active: number; delayed: number }[]>;
  outbox: () => Promise<{ backlog: number; oldestAgeSeconds: number }>;
}

/** How long a scrape reuses a slow reading (Redis, the database): two instances scraped every second cost one call each per period. */
const SLOW_READING_TTL_MS = 5_000;

export class Metrics {
  readonly registry = new Registry();

  /**
   * Answers by operation, method and status class, counted in place (countAnswer) and handed to
   * prom-client at scrape time: its counters hash their labels on every increment.
   */
  private readonly answers = new Map<string, { labels: Record<'operation' | 'method' | 'status_class', string>; count: number; duration: { observe(seconds: number): void } }>();
  /** Requests by operationId (never a raw path: the label stays bounded), method and status class. */
  readonly httpRequests: Counter<'operation' | 'method' | 'status_class'> = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by operation (operationId, or "unmatched"), method and status class.',
    labelNames: ['operation', 'method', 'status_class'],
    registers: [this.registry],
    collect: () => {
      this.httpRequests.reset();
      for (const a of this.answers.values()) this.httpRequests.inc(a.labels, a.count);
    },
  });
  readonly httpDuration = this.histogram('http_request_duration_seconds', 'Time from the request to the end of its answer, by operation.', ['operation'], LATENCY_BUCKETS);
  /** How many requests are being answered now: read at scrape time from the HTTP server (readInFlight). */
  private inFlight: () => number = () => 0;
  readonly httpInFlight: Gauge = new Gauge({
    name: 'http_requests_in_flight',
    help: 'Requests being answered now.',
    registers: [this.registry],
    collect: () => this.httpInFlight.set(this.inFlight()),
  });
  readonly rateLimited = this.counter('http_rate_limited_total', 'Requests refused with 429, by the limit that was spent (src/ratelimit/limits.ts names them; "ip" is the per-IP ceiling).', ['limit']);

  readonly dbQueryErrors = this.counter('db_query_errors_total', 'PostgreSQL statements that failed: reason "unavailable" (connection lost, timeout, server going away) or "error" (any other, constraint violations included).', ['reason']);
  readonly redisErrors = this.counter('redis_command_errors_total', 'Redis commands of the main connection that failed: reason "unavailable" (no connection, timeout, READONLY after a failover) or "error".', ['reason']);

  readonly jobRuns = this.counter('job_runs_finished_total', 'Job attempts that ended on this instance, by kind and state (completed, retryable, discarded, cancelled).', ['kind', 'state']);
  readonly jobDuration = this.histogram('job_run_duration_seconds', 'Time a job attempt ran, by kind.', ['kind'], JOB_BUCKETS);
  readonly jobStalled = this.counter('job_runs_stalled_total', 'Runs found stalled (their worker stopped renewing its lock: killed, or its event loop blocked) and re-delivered, by queue.', ['queue']);

  readonly mail = this.counter('mail_messages_total', 'Mail delivery attempts, by outcome (sent, failed). A failed attempt is retried by its job.', ['outcome']);
  readonly signIns = this.counter('sign_ins_total', 'Sign-in attempts by first-factor method (password, passkey, google, github) and outcome (succeeded, failed, second_factor_required).', ['method', 'outcome']);

  /** One answer of the HTTP server (src/http/request-metrics.ts): its operation, method, status class and duration. */
  countAnswer(operation: string, method: string, statusClass: string, seconds: number): void {
    const key = `${operation} ${method} ${statusClass}`;
    let series = this.answers.get(key);
    if (!series) {
      series = { labels: { operation, method, status_class: statusClass }, count: 0, duration: this.httpDuration.labels(operation) };
      this.answers.set(key, series);
    }
    series.count++;
    series.duration.observe(seconds);
  }

  /** Where http_requests_in_flight is read at scrape time. */
  readInFlight(read: () => number): void {
    this.inFlight = read;
  }

  /** Starts the gauges read at scrape time, from `readers`. */
  observe(readers: MetricReaders): void {
    this.gauge('db_pool_connections_in_use', 'PostgreSQL connections of the pool lent out now.', [], (set) => set({}, readers.pool().used));
    this.gauge('db_pool_connections_idle', 'PostgreSQL connections of the pool open and free.', [], (set) => set({}, readers.pool().free));
    this.gauge('db_pool_requests_waiting', 'Requests waiting for a connection of the pool.', [], (set) => set({}, readers.pool().pending));
    this.gauge('dependency_up', 'Whether a dependency (database, redis) answers, as the dependency monitor knows it: 1 up, 0 down.', ['dependency'], (set) => {
      for (const d of readers.dependencies()) set({ dependency: d.name }, d.up ? 1 : 0);
    });
    new Counter({
      name: 'dependency_outage_seconds_total',
      help: 'Seconds a dependency has been down since this instance started, the outage under way included.',
      labelNames: ['dependency'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const d of readers.dependencies()) this.inc({ dependency: d.name }, d.outageSeconds);
      },
    });
    const depths = cached(readers.queueDepths, SLOW_READING_TTL_MS);
    this.gauge('job_queue_depth', 'Jobs in each BullMQ queue by state (waiting, active, delayed), read at scrape (cached 5 s). The same for every instance: aggregate with max, not sum.', ['queue', 'state'], async (set) => {
      for (const { queue, ...byState } of await depths().catch(() => [])) {
        for (const [state, count] of Object.entries(byState)) set({ queue, state }, count);
      }
    });
    const outbox = cached(readers.outbox, SLOW_READING_TTL_MS);
    this.gauge('job_outbox_backlog', 'Runs due and committed that no worker has started and the sweeper has not seen in BullMQ yet (cached 5 s; the same for every instance).', [], async (set) => {
      const o = await outbox().catch(() => null);
      if (o) set({}, o.backlog);
    });
    this.gauge('job_outbox_oldest_age_seconds', 'How long the oldest run of the outbox backlog has been due, 0 when there is none (cached 5 s).', [], async (set) => {
      const o = await outbox().catch(() => null);
      if (o) set({}, o.oldestAgeSeconds);
    });
  }

  /** Default process metrics (CPU, memory, event loop lag, handles) only where something scrapes them. */
  collectProcessMetrics(): void {
    collectDefaultMetrics({ register: this.registry });
  }

  private counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]): Histogram<L> {
    return new Histogram({ name, help, labelNames, buckets, registers: [this.registry] });
  }

  /** A gauge whose values `read` sets when Prometheus scrapes. */
  private gauge(name: string, help: string, labelNames: string[], read: (set: (labels: Record<string, string>, value: number) => void) => void | Promise<void>): void {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        return read((labels, value) => this.set(labels, value));
      },
    });
  }
}

/** `read`, called at most once per `ttlMs` (concurrent callers share one call); a failure is not kept. */
function cached<T>(read: () => Promise<T>, ttlMs: number): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | null = null;
  return () => {
    if (last && Date.now() - last.at < ttlMs) return last.value;
    const value = read();
    const entry = (last = { at: Date.now(), value });
    value.catch(() => {
      if (last === entry) last = null;
    });
    return value;
  };
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
