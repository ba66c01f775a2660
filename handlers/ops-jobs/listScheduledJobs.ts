import type { Handler } from '../types';
import { listScheduled } from '../../src/jobs/definitions';
import { toApiScheduled } from './mappers';

export const listScheduledJobs: Handler<'listScheduledJobs'> = async ({ app }) => ({
  status: 200,
  body: { items: (await listScheduled(app)).map(toApiScheduled), next_cursor: null },
});
