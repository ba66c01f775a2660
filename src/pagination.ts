// Opaque cursors for newest-first lists: base64url JSON of the last item's sort key.
import { invalidField } from './errors';

export const DEFAULT_LIMIT = 50;

export function encodeCursor(key: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** The decoded key, or a 422 naming `query.cursor` when it is not one of ours. */
export function decodeCursor<T extends Record<string, string | number>>(cursor: string | undefined, check: (key: any) => key is T): T | undefined {
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
export function page<T>(rows: T[], limit: number, keyOf: (last: T) => Record<string, string | number>) {
  const items = rows.slice(0, limit);
  const more = rows.length > limit;
  return { items, nextCursor: more ? encodeCursor(keyOf(items[items.length - 1]!)) : null };
}
