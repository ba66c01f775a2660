// The one place that turns errors (src/errors.ts) into Problem bodies, and the errors only the HTTP
// layer raises.
import type { Response } from 'express';
import { AppError, commonErrors, defineErrors, type ValidationIssue } from '../errors';
import { unavailableDependency } from '../platform/dependencies';
import { reasonPhrase } from './reason-phrases';

export { AppError, type ValidationIssue } from '../errors';

export { reasonPhrase };

export function problemBody(status: number, code: string, detail: string, requestId: string, extra: AppError['extra'] = {}) {
  return {
    type: 'about:blank',
    title: reasonPhrase(status),
    status,
    detail,
    code,
    request_id: requestId,
    ...(extra.errors ? { errors: extra.errors } : {}),
    ...(extra.fields ?? {}),
  };
}

export function sendProblem(res: Response, err: AppError): void {
  const requestId = String(res.locals.requestId ?? '');
  for (const [name, value] of Object.entries(err.extra.headers ?? {})) res.setHeader(name, value);
  if (err.extra.limit) res.locals.rateLimit = err.extra.limit;
  res
    .status(err.status)
    .type('application/problem+json')
    .send(JSON.stringify(problemBody(err.status, err.code, err.message, requestId, err.extra)));
}

const httpErrors = defineErrors('http', {
  malformedBody: { code: 'malformed_body', status: 400, detail: 'The request body is not valid JSON.' },
  methodNotAllowed: { code: 'method_not_allowed', status: 405, detail: 'This path does not accept this method.' },
  payloadTooLarge: { code: 'payload_too_large', status: 413, detail: 'The request body is larger than 1 MiB.' },
  internal: { code: 'internal', status: 500, detail: 'Something went wrong. Quote the request id when reporting it.' },
});

export const problems = {
  malformedBody: (detail?: string) => httpErrors.malformedBody(detail),
  unauthenticated: (detail?: string) => commonErrors.unauthenticated(detail),
  forbidden: (detail?: string) => commonErrors.forbidden(detail),
  notFound: (detail?: string) => commonErrors.notFound(detail),
  methodNotAllowed: (allow: string[]) => httpErrors.methodNotAllowed(`This path accepts ${allow.join(', ')}.`, { headers: { Allow: allow.join(', ') } }),
  payloadTooLarge: () => httpErrors.payloadTooLarge(),
  validation: (errors: ValidationIssue[]) => commonErrors.validation(undefined, { errors }),
  unavailable: (detail?: string, retryAfter = 5) => commonErrors.unavailable(detail, { headers: { 'Retry-After': String(retryAfter) } }),
  internal: () => httpErrors.internal(),
};

/** Turns anything thrown into an AppError; unknown errors become a bare 500 (the log has the detail). */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (unavailableDependency(err)) return problems.unavailable();
  return problems.internal();
}
