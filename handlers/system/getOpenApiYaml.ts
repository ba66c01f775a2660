import type { Handler } from '../../src/http/handler-types';
import { servedContract } from '../../src/http/precompressed';

export const getOpenApiYaml: Handler<'getOpenApiYaml'> = async ({ app, req, res }) => {
  res.type('application/yaml; charset=utf-8');
  return { status: 200, body: (await servedContract(app.contract, 'yaml').for(req, res)) as never };
};
