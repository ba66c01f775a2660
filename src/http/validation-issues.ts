// Ajv's errors as the issues of a 422 Problem (`{message, location}`): located as DESIGN 1 names
// the places of a request, and worded for a client rather than for a schema's author.
import type { ErrorObject } from 'ajv';

/** ajv errors → `{message, location}` with locations as DESIGN 1 names them (`body.a.b`, `query.limit`). */
export function toValidationIssues(all: ErrorObject[]) {
  const errors = explainOneOf(all);
  const seen = new Set<string>();
  const issues: { message: string; location: string }[] = [];
  for (const e of errors) {
    // anyOf/if summaries repeat what their branches already said (oneOf is explained above).
    if (['anyOf', 'if'].includes(e.keyword) && errors.length > 1) continue;
    let location = locationOf(e.instancePath);
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      if (missing === 'requestBody') {
        location = 'body';
        message = 'a JSON request body is required';
      } else {
        location = joinLocation(location, missing);
        message = 'is required';
      }
    } else if (e.keyword === 'additionalProperties') {
      location = joinLocation(location, (e.params as { additionalProperty: string }).additionalProperty);
      message = 'is not allowed';
    } else if (e.keyword === 'parse') {
      location = 'body';
    } else if (e.keyword === 'enum') {
      // ajv's "must be equal to one of the allowed values" does not say which they are.
      message = `must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    } else if (e.keyword === 'pattern') {
      const rule = PATTERN_MESSAGES[(e.params as { pattern: string }).pattern];
      // Inside `propertyNames` ajv locates the object and names the property apart.
      if (rule) message = e.propertyName === undefined ? rule : `${rule} in property names`;
    } else if (e.keyword === 'propertyNames') {
      continue; // "property name must be valid": the pattern's own error, above, says why
    }
    const key = `${location}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push({ message, location });
  }
  return issues;
}

/**
 * A body that fits none of a oneOf's shapes (`{code}` or `{recovery_code}` or `{passkey}`): ajv
 * reports every branch's complaints, which together say "passkey is required" to a client that
 * sent two codes. Instead: a property no shape allows is "not allowed"; if some shape then fits,
 * only its own (deeper) complaints are kept; else one issue names the alternatives.
 */
function explainOneOf(errors: ErrorObject[]): ErrorObject[] {
  const failed = errors.filter((e) => e.keyword === 'oneOf' && (e.params as { passingSchemas: unknown }).passingSchemas === null);
  if (!failed.length) return errors;
  let out = errors;
  for (const oneOf of failed) {
    const prefix = `${oneOf.schemaPath}/`;
    const branches = new Map<string, ErrorObject[]>();
    for (const e of out) {
      if (!e.schemaPath.startsWith(prefix)) continue;
      const index = e.schemaPath.slice(prefix.length).split('/')[0]!;
      branches.set(index, [...(branches.get(index) ?? []), e]);
    }
    if (!branches.size) continue;
    const atLevel = (e: ErrorObject, keyword: string) => e.keyword === keyword && e.instancePath === oneOf.instancePath;
    const nameOf = (e: ErrorObject) => {
      const p = e.params as { additionalProperty?: string; missingProperty?: string };
      return String(p.additionalProperty ?? p.missingProperty);
    };
    const shapeError = (e: ErrorObject) => atLevel(e, 'required') || atLevel(e, 'additionalProperties');
    const lists = [...branches.values()];
    // What every shape says alike (a property none allows, one all require) is said once, as is.
    const key = (e: ErrorObject) => `${e.keyword} ${nameOf(e)}`;
    const common = lists[0]!.filter((e) => shapeError(e) && lists.every((list) => list.some((o) => shapeError(o) && key(o) === key(e))));
    const commonKeys = new Set(common.map(key));
    const residual = lists.map((list) => list.filter((e) => !(shapeError(e) && commonKeys.has(key(e)))));
    const fitting = residual.filter((list) => !list.some(shapeError));
    let explained: ErrorObject[];
    if (fitting.length) explained = [...common, ...fitting.flat()];
    else {
      const names = new Set(residual.flat().filter(shapeError).map(nameOf));
      explained = [...common, { ...oneOf, message: `must have exactly one of: ${[...names].sort().join(', ')}` }];
    }
    out = out.flatMap((e) => (e === oneOf ? explained : e.schemaPath.startsWith(prefix) ? [] : [e]));
  }
  return out;
}

/** The contract's rules for text, in words: ajv's message would quote the pattern. */
const PATTERN_MESSAGES: Record<string, string> = {
  '^[^\\u0000]*$': 'must not contain NUL characters',
  '^\\s*[^\\s\\u0000][^\\u0000]*$': 'must not be blank or contain NUL characters',
};

const ROOTS: Record<string, string> = { requestBody: 'body', path: 'path', query: 'query', header: 'header', cookie: 'cookie' };

function locationOf(instancePath: string): string {
  const [root = '', ...rest] = instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  return rest.reduce(joinLocation, ROOTS[root] ?? (root || 'body'));
}

function joinLocation(base: string, segment: string): string {
  return /^\d+$/.test(segment) ? `${base}[${segment}]` : `${base}.${segment}`;
}
