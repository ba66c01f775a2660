import type { Handler } from '../types';
import { Precompressed } from '../../src/http/precompressed';
import type { Contract } from '../../src/http/contract';

/** Compressed once per encoding. */
const compressed = new WeakMap<Contract, Precompressed>();

export const getOpenApiYaml: Handler<'getOpenApiYaml'> = async ({ app, req, res }) => {
  let doc = compressed.get(app.contract);
  if (!doc) compressed.set(app.contract, (doc = new Precompressed(app.contract.yamlText)));
  res.type('application/yaml; charset=utf-8');
  return { status: 200, body: (await doc.for(req, res)) as never };
};
