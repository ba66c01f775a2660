import type { Handler } from '../../src/http/handler-types';
import { invitationBody } from '../orgs/views';

/** Open invitations, newest first (owners and admins). */
export const listInvitations: Handler<'listInvitations'> = async ({ services, caller, params, query }) => {
  const { items, nextCursor } = await services.invitations.list(caller, params.orgId, { limit: query.limit, cursor: query.cursor });
  return { status: 200, body: { items: items.map(invitationBody), next_cursor: nextCursor } };
};
