import type { Handler } from '../types';
import { DEFAULT_LIMIT, decodeCursor, page } from '../../src/pagination';
import { toApiPasskey } from './views';

const isCursor = (key: any): key is { id: string } => typeof key?.id === 'string' && /^pky_[0-9a-z]{26}$/.test(key.id);

/** The caller's passkeys, newest first. */
export const listPasskeys: Handler<'listPasskeys'> = async ({ services, caller, query }) => {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(query.cursor, isCursor);
  const rows = await services.passkeys.list(caller.userId, limit + 1, after?.id);
  const { items, nextCursor } = page(rows, limit, (last) => ({ id: last.id }));
  return { status: 200, body: { items: items.map(toApiPasskey), next_cursor: nextCursor } };
};
