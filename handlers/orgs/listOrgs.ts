import type { Handler } from '../types';
import { DEFAULT_LIMIT, decodeCursor, page } from '../../src/pagination';
import { idCursor, orgBody } from './views';

const isCursor = idCursor('org');

/** The caller's organisations, newest first (soft-deleted ones they own with `include_deleted=true`). */
export const listOrgs: Handler<'listOrgs'> = async ({ services, caller, query }) => {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(query.cursor, isCursor);
  const rows = await services.orgs.list(caller, { limit: limit + 1, beforeId: after?.id, includeDeleted: query.include_deleted ?? false });
  const { items, nextCursor } = page(rows, limit, (last) => ({ id: last.id }));
  return { status: 200, body: { items: items.map(orgBody), next_cursor: nextCursor } };
};
