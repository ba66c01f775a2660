import type { Handler } from '../types';

export const getOpenApiYaml: Handler<'getOpenApiYaml'> = ({ app, res }) => {
  res.type('application/yaml; charset=utf-8');
  return { status: 200, body: app.contract.yamlText };
};
