import type { Handler } from '../../src/http/handler-types';
import { servedContract } from '../../src/http/precompressed';

export const getOpenApiJson: Handler<'getOpenApiJson'> = async ({ app, req, res }) => {
  res.type('application/json; charset=utf-8');
  // Serialised once at start-up; the type says "the document", the body is its bytes.
  return { status: 200, body: (await servedContract(app.contract, 'json').for(req, res)) as never };
};
