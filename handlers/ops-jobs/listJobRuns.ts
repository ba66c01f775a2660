import type { Handler } from '../types';
import { listRuns } from '../../src/jobs/runs';
import { toApiRun } from './mappers';

export const listJobRuns: Handler<'listJobRuns'> = async ({ app, query }) => {
  const { items, nextCursor } = await listRuns(app, { kind: query.kind, state: query.state, queue: query.queue }, { limit: query.limit, cursor: query.cursor });
  return { status: 200, body: { items: items.map(toApiRun), next_cursor: nextCursor } };
};
