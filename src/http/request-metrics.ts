// Every answer counted and timed for Prometheus (src/platform/metrics.ts), labelled by the
// operationId the router found ("unmatched" for a 404 or 405 path): never the raw path, which
// would make a series per id. Cheap on the request path (bench:metrics): called from the close
// listener the HTTP server has on every response anyway (server.ts), with the start time it kept
// there, and counted in place by Metrics.countAnswer.
import type { ServerResponse } from 'node:http';
import type { Response } from 'express';
import type { Config } from '../config';
import type { Metrics } from '../platform/metrics';
import type { AnswerObserver } from './server';

/** What the HTTP server is given (server.ts): nothing without METRICS_PORT, so nothing is counted. */
export function answerObserver(app: { config: Pick<Config, 'metricsPort'>; metrics: Metrics }): AnswerObserver | undefined {
  return app.config.metricsPort === null ? undefined : measureRequests(app.metrics);
}

function measureRequests(metrics: Metrics): AnswerObserver {
  return (res: ServerResponse, startedAt: bigint) => {
    // Express gave the response its locals; an answer Express never saw (none today) has none.
    const locals = (res as Response).locals as Record<string, unknown> | undefined;
    const operation = (locals?.operationId as string | undefined) ?? 'unmatched';
    const status = res.statusCode;
    metrics.countAnswer(operation, res.req.method ?? 'GET', STATUS_CLASSES[Math.floor(status / 100)] ?? 'other', Number(process.hrtime.bigint() - startedAt) / 1e9);
    if (status === 429) metrics.rateLimited.labels((locals?.rateLimit as string | undefined) ?? 'unknown').inc();
  };
}

const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];
