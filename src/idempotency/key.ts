// What a keyed request is: its Idempotency-Key header read as a Structured Field string
// (draft-ietf-httpapi-idempotency-key-header), and the fingerprint of what it asked, which a retry
// must match to be given the stored answer.
import { createHash } from 'node:crypto';
import { invalidField } from '../errors';

/**
 * The header's value: a Structured Field string, `"…"` (printable ASCII, `\"` and `\\` escaped),
 * or, leniently, the same key sent bare (printable ASCII without spaces or `"`); 1 to 255
 * characters either way. The contract's IdempotencyKey parameter has this very pattern (a
 * contract test compares them).
 */
export const IDEMPOTENCY_KEY_PATTERN = /^(?:"(?:[ !#-\[\]-~]|\\["\\]){1,255}"|[!#-~]{1,255})$/;

/** The key a header value names: the string's content, unescaped; 422 at `header.Idempotency-Key` for anything else. */
export function parseIdempotencyKey(value: string | string[]): string {
  // A repeated header reaches here as an array or joined with ", ": neither is one key.
  if (typeof value !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(value)) {
    throw invalidField(
      'header.Idempotency-Key',
      'must be one string of 1 to 255 printable ASCII characters, quoted as a Structured Field string ("…", with \\" and \\\\ escaped) or bare without spaces or quotes',
    );
  }
  return value.startsWith('"') ? value.slice(1, -1).replace(/\\(["\\])/g, '$1') : value;
}

/** What a request asked, as the fingerprint a retry must match: a SHA-256 over a canonical JSON form. */
export interface RequestShape {
  method: string;
  operationId: string;
  userId: string;
  params: unknown;
  query: unknown;
  body: unknown;
}

export function fingerprintOf(r: RequestShape): Buffer {
  const canonical = JSON.stringify([r.method.toUpperCase(), r.operationId, r.userId, sorted(r.params), sorted(r.query), sorted(r.body)]);
  return createHash('sha256').update(canonical).digest();
}

/** The same value with every object's members in name order (null for undefined), so member order never tells two requests apart. */
function sorted(value: unknown): unknown {
  if (value === undefined) return null;
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => [k, sorted((value as Record<string, unknown>)[k])]),
  );
}
