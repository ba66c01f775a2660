// The codes an error response documents: the `code` enum of its problem schema
// (`content["application/problem+json"].schema` → `properties.code` → enum), following $refs.
import { resolveRef } from '../../src/contract';

type Doc = Record<string, any>;

/** The problem schema's `code` enum, or [] when the response has no problem body. */
export function problemCodes(document: Doc, response: any): string[] {
  const schema = resolveRef(document, resolveRef(document, response)?.content?.['application/problem+json']?.schema);
  return resolveRef(document, schema?.properties?.code)?.enum ?? [];
}
