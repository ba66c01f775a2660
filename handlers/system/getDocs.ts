// /docs: Redoc rendering our own contract, with the Redoc bundle served from this service
// (no CDN: it renders offline and under a strict Content-Security-Policy).
import type { Handler } from '../../src/http/handler-types';
import { DOCS_CSP } from '../../src/http/security-headers';

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Tenant API reference</title>
    <link rel="icon" href="data:,">
  </head>
  <body>
    <redoc spec-url="/openapi.json" hide-download-button="false"></redoc>
    <script src="/docs/redoc.standalone.js"></script>
  </body>
</html>
`;

export const getDocs: Handler<'getDocs'> = ({ res }) => {
  res.type('text/html; charset=utf-8');
  return { status: 200, body: PAGE, headers: { 'Content-Security-Policy': DOCS_CSP } };
};
