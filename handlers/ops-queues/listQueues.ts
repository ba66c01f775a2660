import type { Handler } from '../../src/http/handler-types';

export const listQueues: Handler<'listQueues'> = async ({ services }) => ({ status: 200, body: { items: await services.queues.list(), next_cursor: null } });
