// Builds a valid request for any operation from the contract's own examples.
import type { Contract, OperationInfo } from '../../src/contract';

function deref(contract: Contract, obj: any): any {
  while (obj && obj.$ref) {
    const parts = obj.$ref.replace(/^#\//, '').split('/');
    obj = parts.reduce((o: any, k: string) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], contract.document);
  }
  return obj;
}

function exampleOf(contract: Contract, holder: any): unknown {
  if (!holder) return undefined;
  if (holder.examples && typeof holder.examples === 'object' && !Array.isArray(holder.examples)) {
    const first = deref(contract, Object.values(holder.examples)[0]);
    if (first && 'value' in first) return first.value;
  }
  if ('example' in holder) return holder.example;
  const schema = deref(contract, holder.schema);
  if (schema?.example !== undefined) return schema.example;
  if (Array.isArray(schema?.examples)) return schema.examples[0];
  return undefined;
}

export function exampleRequest(contract: Contract, op: OperationInfo) {
  const raw = contract.document.paths[op.path][op.method];
  let url = op.path;
  const query = new URLSearchParams();
  const params = [...(contract.document.paths[op.path].parameters ?? []), ...(raw.parameters ?? [])];
  for (const p of params.map((x: any) => deref(contract, x))) {
    if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(String(exampleOf(contract, p))));
    if (p.in === 'query' && p.required) query.set(p.name, String(exampleOf(contract, p)));
  }
  if ([...query].length) url += `?${query}`;
  const body = raw.requestBody ? deref(contract, raw.requestBody) : undefined;
  const contentType = body ? Object.keys(body.content)[0]! : undefined;
  return { url, contentType, body: body ? exampleOf(contract, body.content[contentType!]) : undefined, bodyRequired: !!body?.required };
}
