import type { Handler } from '../types';

export const getOpenApiYaml: Handler<'getOpenApiYaml'> = ({ app, res }) => {
  res.type('application/yaml; charset=utf-8');
  return { status: 200, body: app.contract.yamlText };
};

export const getOpenApiJson: Handler<'getOpenApiJson'> = ({ app, res }) => {
  res.type('application/json; charset=utf-8');
  return { status: 200, body: app.contract.jsonText as never };
};
