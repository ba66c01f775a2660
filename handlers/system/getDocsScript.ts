// The Redoc bundle, from the redoc package, served by this service so /docs needs no CDN.
import fs from 'node:fs';
import type { Handler } from '../../src/http/handler-types';
import { Precompressed } from '../../src/http/precompressed';

let script: Precompressed | undefined;

export const getDocsScript: Handler<'getDocsScript'> = async ({ req, res }) => {
  script ??= new Precompressed(fs.readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8'));
  res.type('application/javascript; charset=utf-8');
  return { status: 200, body: (await script.for(req, res)) as never, headers: { 'Cache-Control': 'public, max-age=3600' } };
};
