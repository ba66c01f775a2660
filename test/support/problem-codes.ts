// The codes an error response documents: the `code` enum of its problem schema
// (`content["application/problem+json"].schema` → `properties.code` → enum), following $refs.
type Doc = Record<string, any>;

export function deref(document: Doc, obj: any): any {
  while (obj?.$ref) obj = obj.$ref.replace(/^#\//, '').split('/').reduce((o: any, k: string) => o[k], document);
  return obj;
}

/** The problem schema's `code` enum, or [] when the response has no problem body. */
export function problemCodes(document: Doc, response: any): string[] {
  const schema = deref(document, deref(document, response)?.content?.['application/problem+json']?.schema);
  return deref(document, schema?.properties?.code)?.enum ?? [];
}
