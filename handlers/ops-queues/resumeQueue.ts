import type { Handler } from '../types';
import { setQueuePaused } from '../../src/jobs/queues';
import { actingOperator } from '../actor';

export const resumeQueue: Handler<'resumeQueue'> = async (ctx) => ({
  status: 200,
  body: await setQueuePaused(ctx.app, ctx.params.name, false, actingOperator(ctx)),
});
