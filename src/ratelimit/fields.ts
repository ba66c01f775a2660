// The RateLimit-Policy and RateLimit field values (IETF httpapi draft, structured fields): one
// policy item and one limit item per limit, named by an sf-string (our names need no escapes).
//
//   RateLimit-Policy: "login.ip";q=10;w=60, "login.email";q=10;w=60
//   RateLimit: "login.ip";r=7;t=42, "login.email";r=9;t=42

export const RATE_LIMIT_HEADER = 'RateLimit';
const RATE_LIMIT_POLICY_HEADER = 'RateLimit-Policy';

export interface LimitFields {
  /** The policy's name. */
  limit: string;
  /** Quota: attempts allowed per window. */
  max: number;
  windowSeconds: number;
  used: number;
  /** Seconds until the quota is whole again. */
  resetSeconds: number;
}

export function rateLimitFields(uses: LimitFields[]): Record<string, string> {
  return {
    [RATE_LIMIT_POLICY_HEADER]: uses.map((u) => `"${u.limit}";q=${u.max};w=${u.windowSeconds}`).join(', '),
    [RATE_LIMIT_HEADER]: uses.map((u) => `"${u.limit}";r=${Math.max(0, u.max - u.used)};t=${u.resetSeconds}`).join(', '),
  };
}
