import type { Handler } from '../../src/http/handler-types';
import { projectBody } from '../orgs/views';

/** Newest first. */
export const listProjects: Handler<'listProjects'> = async ({ services, caller, params, query }) => {
  const { items, nextCursor } = await services.projects.list(caller, params.orgId, { limit: query.limit, cursor: query.cursor });
  return { status: 200, body: { items: items.map(projectBody), next_cursor: nextCursor } };
};
