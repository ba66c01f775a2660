// Every answer counted and timed for Prometheus (src/platform/metrics.ts), labelled by the
// operationId the router found ("unmatched" for a 404 or 405 path): never the raw path, which
// would make a series per id. Cheap on the request path: one handler function shared by every response
// (`once` adds only its small wrapper), and each label set's counter and histogram looked up once, then kept
// (prom-client hashes the labels on every call otherwise).
import type { Response } from 'express';
import type { Metrics } from '../platform/metrics';


interface Series {
  count: { inc(): void };
  duration: { observe(seconds: number): void };
}

export function measureRequests(metrics: Metrics): (res: Response) => void {
  const series = new Map<string, Series>();
  function seriesOf(operation: string, method: string, statusClass: string): Series {
    const key = `${operation} ${method} ${statusClass}`;
    let found = series.get(key);
    if (!found) {
      found = { count: metrics.httpRequests.labels(operation, method, statusClass), duration: metrics.httpDuration.labels(operation) };
      series.set(key, found);
    }
    return found;
  }
  function finished(this: Response) {
    metrics.httpInFlight.dec();
    const operation = (this.locals.operationId as string | undefined) ?? 'unmatched';
    const s = seriesOf(operation, this.req.method, STATUS_CLASSES[Math.floor(this.statusCode / 100)] ?? 'other');
    s.count.inc();
    if (this.statusCode === 429) metrics.rateLimited.labels((this.locals.rateLimit as string | undefined) ?? 'unknown').inc();
    s.duration.observe(Number(process.hrtime.bigint() - (this.locals.startedAt as bigint)) / 1e9);
  }
  // The start goes in res.locals (there already): a new property on every response would change
  // the shape V8 keeps for responses.
  return (res: Response) => {
    res.locals.startedAt = process.hrtime.bigint();
    metrics.httpInFlight.inc();
    res.once('close', finished);
  };
}

const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];
