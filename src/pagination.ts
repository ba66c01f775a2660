// Opaque cursors for paged lists: base64url JSON of the last item's sort key. The domain pages
// (it takes a PageRequest and returns a Page); handlers only map the items.
import { invalidField } from './errors';
import type { IdPrefix } from './ids';

export const DEFAULT_LIMIT = 50;

/** What a caller asks of a paged list: how many (DEFAULT_LIMIT when absent) and after which cursor. */
export interface PageRequest {
  limit?: number;
  cursor?: string;
}

/** One page of a list; `nextCursor` is null on the last. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** A decoded cursor before its check: parsed JSON of unknown shape, whose fields the check reads (with `?.`). */
type DecodedKey = { readonly [field: string]: unknown } | null;

export function encodeCursor(key: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** The decoded key, or a 422 naming `query.cursor` when it is not one of ours. */
export function decodeCursor<T extends Record<string, string | number>>(cursor: string | undefined, check: (key: DecodedKey) => key is T): T | undefined {
  if (cursor === undefined) return undefined;
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (check(key)) return key;
  } catch {
    // fall through
  }
  throw invalidField('query.cursor', 'is not a cursor from this list', 'The cursor is not valid.');
}

/** Fetches one more than asked to know whether there is a next page. */
export function page<T>(rows: T[], limit: number, keyOf: (last: T) => Record<string, string | number>): Page<T> {
  const items = rows.slice(0, limit);
  const more = rows.length > limit;
  return { items, nextCursor: more ? encodeCursor(keyOf(items[items.length - 1]!)) : null };
}

/**
 * One page of a list in key order: decodes the cursor with `check` (422 before anything is
 * fetched when it fails), fetches limit + 1 rows after its key, and pages them by `keyOf`.
 */
export async function pageAfter<T, K extends Record<string, string | number>>(
  request: PageRequest,
  check: (key: DecodedKey) => key is K,
  fetch: (limit: number, after: K | undefined) => Promise<T[]>,
  keyOf: (last: T) => K,
): Promise<Page<T>> {
  const limit = request.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(request.cursor, check);
  const rows = await fetch(limit + 1, after);
  return page(rows, limit, keyOf);
}

/**
 * One page of a newest-first list keyed by a prefixed id: the cursor is `{"id": "<prefix>_<ulid>"}`
 * (422 otherwise); `fetch` gets limit + 1 and the id to list before.
 */
export function pageById<T extends { id: string }>(
  prefix: IdPrefix,
  request: PageRequest,
  fetch: (limit: number, beforeId: string | undefined) => Promise<T[]>,
): Promise<Page<T>> {
  const pattern = idPattern(prefix);
  return pageAfter(
    request,
    (key): key is { id: string } => typeof key?.id === 'string' && pattern.test(key.id),
    (limit, after) => fetch(limit, after?.id),
    (last) => ({ id: last.id }),
  );
}

const idPatterns = new Map<IdPrefix, RegExp>();

/** `^<prefix>_<ulid>$`, compiled once per prefix (lists are hot paths). */
function idPattern(prefix: IdPrefix): RegExp {
  let pattern = idPatterns.get(prefix);
  if (!pattern) idPatterns.set(prefix, (pattern = new RegExp(`^${prefix}_[0-9a-z]{26}$`)));
  return pattern;
}
