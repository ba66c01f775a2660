import type { Handler } from '../types';
import { Precompressed } from '../../src/http/precompressed';
import type { Contract } from '../../src/http/contract';

/** Serialised once at start-up, compressed once per encoding. */
const compressed = new WeakMap<Contract, Precompressed>();

export const getOpenApiJson: Handler<'getOpenApiJson'> = async ({ app, req, res }) => {
  let doc = compressed.get(app.contract);
  if (!doc) compressed.set(app.contract, (doc = new Precompressed(app.contract.jsonText)));
  res.type('application/json; charset=utf-8');
  // The type says "the document"; the body is its bytes.
  return { status: 200, body: (await doc.for(req, res)) as never };
};
