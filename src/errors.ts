// The one error type of the service. Domains throw AppErrors with a stable code and an HTTP-like
// status; only src/http turns them into Problem bodies. Each domain declares its codes once with
// `defineErrors` (its own errors.ts), and a test checks every declared code against the codes the
// contract lists (each error response's problem schema has a `code` enum), so a code the contract does not document cannot ship.

export interface ValidationIssue {
  message: string;
  location: string;
}

export interface ErrorExtra {
  errors?: ValidationIssue[];
  headers?: Record<string, string>;
  fields?: Record<string, unknown>;
  /** A 429's spent limit, for the metrics (never in the body). */
  limit?: string;
}

export class AppError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    detail: string,
    readonly extra: ErrorExtra = {},
  ) {
    super(detail);
    this.name = 'AppError';
  }
}

export interface DeclaredError {
  domain: string;
  code: string;
  status: number;
}

/** Every code declared through `defineErrors`, for the contract test. */
export const declaredErrors: DeclaredError[] = [];

type ErrorDefs = Record<string, { code: string; status: number; detail: string }>;
type ErrorFactories<T extends ErrorDefs> = { [K in keyof T]: (detail?: string, extra?: ErrorExtra) => AppError };

/**
 * Declares a domain's errors: `const errors = defineErrors('accounts', { emailTaken: { code:
 * 'email_taken', status: 409, detail: '…' } })`, then `throw errors.emailTaken()`.
 */
export function defineErrors<T extends ErrorDefs>(domain: string, defs: T): ErrorFactories<T> {
  const factories = {} as Record<string, (detail?: string, extra?: ErrorExtra) => AppError>;
  for (const [name, def] of Object.entries(defs)) {
    declaredErrors.push({ domain, code: def.code, status: def.status });
    factories[name] = (detail = def.detail, extra = {}) => new AppError(def.code, def.status, detail, extra);
  }
  return factories as ErrorFactories<T>;
}

/** Errors any domain may raise. */
export const commonErrors = defineErrors('common', {
  unauthenticated: { code: 'unauthenticated', status: 401, detail: 'Sign in to use this operation.' },
  forbidden: { code: 'forbidden', status: 403, detail: 'You do not have permission to do this.' },
  notFound: { code: 'not_found', status: 404, detail: 'No such resource.' },
  versionConflict: { code: 'version_conflict', status: 409, detail: 'The resource changed since you read it.' },
  validation: { code: 'validation_failed', status: 422, detail: 'The request does not match the contract.' },
  rateLimited: { code: 'rate_limited', status: 429, detail: 'Too many requests.' },
  unavailable: { code: 'unavailable', status: 503, detail: 'A dependency is unreachable. Try again shortly.' },
});

/** 422 naming one field: `invalidField('query.cursor', 'is not a cursor from this list')`. */
export function invalidField(location: string, message: string, detail?: string): AppError {
  return commonErrors.validation(detail, { errors: [{ location, message }] });
}

/** 429 with Retry-After; `limit` names the limit spent (counted by src/http/request-metrics.ts). */
export function rateLimited(limit: string, retryAfterSeconds: number, detail = `Too many requests. Try again in ${retryAfterSeconds} seconds.`): AppError {
  return commonErrors.rateLimited(detail, { headers: { 'Retry-After': String(retryAfterSeconds) }, limit });
}
