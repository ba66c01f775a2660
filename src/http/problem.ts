// One error type for the whole service, and the one place that turns errors into Problem bodies.
import { STATUS_CODES } from 'node:http';
import type { Response } from 'express';

export interface ValidationIssue {
  message: string;
  location: string;
}

/** Throw this anywhere: `new AppError('last_owner', 409, 'An organisation needs an owner.')`. */
export class AppError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    detail: string,
    readonly extra: { errors?: ValidationIssue[]; headers?: Record<string, string>; fields?: Record<string, unknown> } = {},
  ) {
    super(detail);
    this.name = 'AppError';
  }
}

export const reasonPhrase = (status: number): string => {
  // RFC 9110 renamed these two; Node still ships the old phrases.
  if (status === 413) return 'Content Too Large';
  if (status === 422) return 'Unprocessable Content';
  return STATUS_CODES[status] ?? 'Error';
};

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
  res
    .status(err.status)
    .type('application/problem+json')
    .send(JSON.stringify(problemBody(err.status, err.code, err.message, requestId, err.extra)));
}

export const problems = {
  malformedBody: () => new AppError('malformed_body', 400, 'The request body is not valid JSON.'),
  unauthenticated: () => new AppError('unauthenticated', 401, 'Sign in to use this operation.'),
  forbidden: (detail = 'You do not have permission to do this.') => new AppError('forbidden', 403, detail),
  notFound: (detail = 'No such resource.') => new AppError('not_found', 404, detail),
  methodNotAllowed: (allow: string[]) =>
    new AppError('method_not_allowed', 405, `This path accepts ${allow.join(', ')}.`, { headers: { Allow: allow.join(', ') } }),
  payloadTooLarge: () => new AppError('payload_too_large', 413, 'The request body is larger than 1 MiB.'),
  validation: (errors: ValidationIssue[]) =>
    new AppError('validation_failed', 422, 'The request does not match the contract.', { errors }),
  notImplemented: () => new AppError('not_implemented', 501, 'This operation is not implemented yet.'),
  unavailable: (detail = 'A dependency is unreachable. Try again shortly.', retryAfter = 5) =>
    new AppError('unavailable', 503, detail, { headers: { 'Retry-After': String(retryAfter) } }),
  internal: () => new AppError('internal', 500, 'Something went wrong. Quote the request id when reporting it.'),
};

/** Errors that mean a dependency is down (not a bug): answered 503, not 500. */
export function isDependencyDown(err: unknown): boolean {
  // Duck-typed, not `instanceof Error`: errors from node's own modules may come from another realm.
  if (typeof err !== 'object' || err === null) return false;
  const { code, name = '', message = '' } = err as { code?: string; name?: string; message?: string };
  if (code && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', '57P01', '57P03', '53300'].includes(code)) return true;
  if (name === 'KnexTimeoutError' || name === 'MaxRetriesPerRequestError') return true;
  return /Connection is closed|Stream isn't writeable|enableOfflineQueue|Connection terminated/i.test(message);
}

/** Turns anything thrown into an AppError; unknown errors become a bare 500 (the log has the detail). */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isDependencyDown(err)) return problems.unavailable();
  return problems.internal();
}
