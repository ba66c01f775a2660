// RateLimit-Policy and RateLimit headers (src/ratelimit/fields.ts) on the answers of the operations
// whose success responses the contract gives them: the budget of each named limit the request
// counted against and what is left of it, errors included (a 401 after a wrong password says how
// many tries remain; a 429 that none do, beside Retry-After).
//
// The limits are counted deep in the domain (src/ratelimit/limits.ts); the request's services
// carry a report the limits write into, so no domain code knows about headers.
import type { Response } from 'express';
import type { AppContext } from '../app-context';
import type { Contract, OperationInfo } from '../contract';
import { Services } from '../services';
import { LimitReport } from '../ratelimit/report';
import { RATE_LIMIT_HEADER, rateLimitFields } from '../ratelimit/fields';

/** Whether the contract gives the operation's success answers the RateLimit headers. */
export function reportsLimits(contract: Contract, op: OperationInfo): boolean {
  const responses: Record<string, { headers?: Record<string, unknown> } | undefined> = contract.document.paths[op.path]?.[op.method]?.responses ?? {};
  return Object.entries(responses).some(([status, response]) => status.startsWith('2') && response?.headers && RATE_LIMIT_HEADER in response.headers);
}

export function setRateLimitHeaders(res: Response, report: LimitReport | undefined): void {
  const uses = report?.all();
  if (!uses?.length || res.headersSent) return;
  for (const [name, value] of Object.entries(rateLimitFields(uses))) res.setHeader(name, value);
}

/**
 * The services of one request whose limits write into `report`. Transactions opened from here
 * carry the report too; they refuse to count limits unless opened for a keyed request
 * (src/services.ts).
 */
export function servicesReportingLimits(app: AppContext): { services: Services; report: LimitReport } {
  const report = new LimitReport();
  return { services: new Services(app, null, null, { report }), report };
}
