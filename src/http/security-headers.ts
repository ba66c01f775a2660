import helmet from 'helmet';

/**
 * A JSON API needs almost nothing from a browser: the default policy forbids everything.
 * Only the Redoc page at /docs gets what it needs: its own script (same origin), inline styles
 * (styled-components), a blob: worker for search, and data: images.
 */
export const apiSecurityHeaders = helmet({
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  crossOriginResourcePolicy: { policy: 'same-origin' },
});

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
