import type { Response } from 'express';
import helmet from 'helmet';

/**
 * A JSON API needs almost nothing from a browser: the default policy forbids everything.
 * Only the Redoc page at /docs gets what it needs: its own script (same origin), inline styles
 * (styled-components), a blob: worker for search, and data: images.
 *
 * helmet decides the headers; they do not depend on the request, so they are taken from it once
 * and set on every response in one loop (helmet's chain of a dozen middlewares cost more).
 */
const HEADERS: [string, string][] = (() => {
  const headers: [string, string][] = [];
  const capture = {
    setHeader: (name: string, value: string | number | readonly string[]) => headers.push([name, String(value)]),
    removeHeader: () => undefined,
  };
  helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    crossOriginResourcePolicy: { policy: 'same-origin' },
    // Not sent: headers no current browser reads on an answer like ours, each a setHeader and
    // ~30 bytes on every answer. X-Download-Options (Internet Explorer 8), X-XSS-Protection (it
    // turned off a filter no current browser has), X-Permitted-Cross-Domain-Policies (Flash),
    // X-DNS-Prefetch-Control and Origin-Agent-Cluster (hints for rendered documents; JSON is not
    // rendered, and the /docs page loads nothing from another origin).
    xDownloadOptions: false,
    xXssProtection: false,
    xPermittedCrossDomainPolicies: false,
    xDnsPrefetchControl: false,
    originAgentCluster: false,
  })({} as never, capture as never, () => undefined);
  return headers;
})();

export function apiSecurityHeaders(res: Response): void {
  for (const [name, value] of HEADERS) res.setHeader(name, value);
}

export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');
