// The Redoc bundle, from the redoc package, served by this service so /docs needs no CDN.
import fs from 'node:fs';
import type { Handler } from '../types';

let script: string | undefined;

export const getDocsScript: Handler<'getDocsScript'> = ({ res }) => {
  script ??= fs.readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8');
  res.type('application/javascript; charset=utf-8');
  return { status: 200, body: script, headers: { 'Cache-Control': 'public, max-age=3600' } };
};
