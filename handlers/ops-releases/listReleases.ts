import type { Handler } from '../../src/http/handler-types';
import { toApiRelease } from './views';

export const listReleases: Handler<'listReleases'> = async ({ services, query }) => {
  const { items, nextCursor } = await services.releases.list({ limit: query.limit, cursor: query.cursor });
  return { status: 200, body: { items: items.map(toApiRelease), next_cursor: nextCursor } };
};
