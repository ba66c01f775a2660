import type { Handler } from '../../src/http/handler-types';
import { toApiDefinitionChange } from './views';

export const listJobDefinitionHistory: Handler<'listJobDefinitionHistory'> = async ({ services, params, query }) => {
  const { items, nextCursor } = await services.jobDefinitions.listHistory(params.name, { limit: query.limit, cursor: query.cursor });
  return { status: 200, body: { items: items.map(toApiDefinitionChange), next_cursor: nextCursor } };
};
