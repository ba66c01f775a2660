import type { Handler } from '../types';
import { DEFAULT_LIMIT, decodeCursor, page } from '../../src/pagination';
import { idCursor, invitationBody } from '../orgs/views';

const isCursor = idCursor('inv');

/** Open invitations, newest first (owners and admins). */
export const listInvitations: Handler<'listInvitations'> = async ({ services, caller, params, query }) => {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(query.cursor, isCursor);
  const rows = await services.invitations.list(caller, params.orgId, { limit: limit + 1, beforeId: after?.id });
  const { items, nextCursor } = page(rows, limit, (last) => ({ id: last.id }));
  return { status: 200, body: { items: items.map(invitationBody), next_cursor: nextCursor } };
};
