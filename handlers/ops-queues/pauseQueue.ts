import type { Handler } from '../types';
import { setQueuePaused } from '../../src/jobs/queues';
import { actingOperator } from '../actor';

export const pauseQueue: Handler<'pauseQueue'> = async (ctx) => ({
  status: 200,
  body: await setQueuePaused(ctx.app, ctx.params.name, true, actingOperator(ctx)),
});
