import type { Handler } from '../../src/http/handler-types';
import { toApiSettingChange } from './views';

export const listSettingHistory: Handler<'listSettingHistory'> = async ({ services, params, query }) => {
  const { items, nextCursor } = await services.settings.history(params.key, { limit: query.limit, cursor: query.cursor });
  return { status: 200, body: { items: items.map(toApiSettingChange), next_cursor: nextCursor } };
};
