import type { Handler } from '../types';
import { DEFAULT_LIMIT, decodeCursor, page } from '../../src/pagination';
import { idCursor, projectBody } from '../orgs/views';

const isCursor = idCursor('prj');

/** Newest first. */
export const listProjects: Handler<'listProjects'> = async ({ services, caller, params, query }) => {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(query.cursor, isCursor);
  const rows = await services.projects.list(caller, params.orgId, { limit: limit + 1, beforeId: after?.id });
  const { items, nextCursor } = page(rows, limit, (last) => ({ id: last.id }));
  return { status: 200, body: { items: items.map(projectBody), next_cursor: nextCursor } };
};
