import type { Handler } from '../types';
import { listQueues as list } from '../../src/jobs/queues';

export const listQueues: Handler<'listQueues'> = async ({ app }) => ({ status: 200, body: { items: await list(app), next_cursor: null } });
