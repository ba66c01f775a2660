import type { Handler } from '../types';

export const getOpenApiJson: Handler<'getOpenApiJson'> = ({ app, res }) => {
  res.type('application/json; charset=utf-8');
  // Serialised once at start-up rather than on every request; the type says "the document".
  return { status: 200, body: app.contract.jsonText as never };
};
