import type { Handler } from '../types';
import { DEFAULT_LIMIT, decodeCursor, page } from '../../src/pagination';
import { isMemberCursor, memberBody } from '../orgs/views';

/** Oldest membership first. */
export const listMembers: Handler<'listMembers'> = async ({ services, caller, params, query }) => {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(query.cursor, isMemberCursor);
  const rows = await services.orgs.listMembers(caller, params.orgId, { limit: limit + 1, after: after && { joinedAt: after.t, userId: after.u } });
  const { items, nextCursor } = page(rows, limit, (last) => ({ t: last.joinedAt.toISOString(), u: last.userId }));
  return { status: 200, body: { items: items.map(memberBody), next_cursor: nextCursor } };
};
