import type { Handler } from '../../src/http/handler-types';
import { orgBody } from './views';

/** The caller's organisations, newest first (soft-deleted ones they own with `include_deleted=true`). */
export const listOrgs: Handler<'listOrgs'> = async ({ services, caller, query }) => {
  const { items, nextCursor } = await services.orgs.list(caller, { limit: query.limit, cursor: query.cursor, includeDeleted: query.include_deleted ?? false });
  return { status: 200, body: { items: items.map(orgBody), next_cursor: nextCursor } };
};
