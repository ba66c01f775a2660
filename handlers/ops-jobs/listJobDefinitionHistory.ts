import type { Handler } from '../types';
import { listHistory } from '../../src/jobs/definitions';
import { toApiDefinitionChange } from './mappers';

export const listJobDefinitionHistory: Handler<'listJobDefinitionHistory'> = async ({ app, params, query }) => {
  const { items, nextCursor } = await listHistory(app, params.name, { limit: query.limit, cursor: query.cursor });
  return { status: 200, body: { items: items.map(toApiDefinitionChange), next_cursor: nextCursor } };
};
