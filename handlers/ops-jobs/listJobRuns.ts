import type { Handler } from '../../src/http/handler-types';
import { toApiRun } from './views';

export const listJobRuns: Handler<'listJobRuns'> = async ({ services, query }) => {
  const { items, nextCursor } = await services.jobRuns.list({ kinds: query.kind, states: query.state, queues: query.queue }, { limit: query.limit, cursor: query.cursor });
  return { status: 200, body: { items: items.map(toApiRun), next_cursor: nextCursor } };
};
