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
import { Limits } from '../ratelimit/limits';
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
 * The services of one request whose limits write into `report`. Every other service is made on
 * first use as in any scope; transactions opened from here get plain services (limits are never
 * counted inside a transaction).
 */
class LimitReportingServices extends Services {
  private reportingLimits: Limits | undefined;

  constructor(
    platform: AppContext,
    private readonly report: LimitReport,
  ) {
    super(platform);
  }

  override get limits(): Limits {
    return (this.reportingLimits ??= new Limits(this.platform.redis, this.config.redisPrefix, this.platform.runtimeSettings, false, this.report));
  }
}

export function servicesReportingLimits(app: AppContext): { services: Services; report: LimitReport } {
  const report = new LimitReport();
  return { services: new LimitReportingServices(app, report), report };
}
