import type { Handler } from '../../src/http/handler-types';
import { toApiScheduled } from './views';

export const listScheduledJobs: Handler<'listScheduledJobs'> = async ({ services }) => ({
  status: 200,
  body: { items: (await services.jobDefinitions.listScheduled()).map(toApiScheduled), next_cursor: null },
});
