import type { Handler } from '../../src/http/handler-types';
import { toApiInstance } from './views';

export const listInstances: Handler<'listInstances'> = async ({ services, query }) => {
  const { items, nextCursor } = await services.releases.listInstances({ limit: query.limit, cursor: query.cursor });
  return { status: 200, body: { items: items.map(toApiInstance), next_cursor: nextCursor } };
};
