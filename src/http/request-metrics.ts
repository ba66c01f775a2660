// Every answer counted and timed for Prometheus (src/platform/metrics.ts), labelled by the
// operationId the router found ("unmatched" for a 404 or 405 path): never the raw path, which
// would make a series per id. One listener per response, shared: no closure per request.
import type { Response } from 'express';
import type { Metrics } from '../platform/metrics';

const STARTED = Symbol('metricsStartedAt');
type Timed = Response & { [STARTED]?: bigint };

export function measureRequests(metrics: Metrics): (res: Response) => void {
  function finished(this: Timed) {
    metrics.httpInFlight.dec();
    const operation = (this.locals.operationId as string | undefined) ?? 'unmatched';
    const seconds = Number(process.hrtime.bigint() - this[STARTED]!) / 1e9;
    metrics.httpRequests.inc({ operation, method: this.req.method, status_class: `${Math.floor(this.statusCode / 100)}xx` });
    metrics.httpDuration.observe({ operation }, seconds);
  }
  return (res: Timed) => {
    res[STARTED] = process.hrtime.bigint();
    metrics.httpInFlight.inc();
    res.once('close', finished);
  };
}
