import type { Handler } from '../../src/http/handler-types';
import { memberBody } from '../orgs/views';

/** Oldest membership first. */
export const listMembers: Handler<'listMembers'> = async ({ services, caller, params, query }) => {
  const { items, nextCursor } = await services.orgs.listMembers(caller, params.orgId, { limit: query.limit, cursor: query.cursor });
  return { status: 200, body: { items: items.map(memberBody), next_cursor: nextCursor } };
};
