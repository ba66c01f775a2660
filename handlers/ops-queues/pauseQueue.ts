import type { Handler } from '../types';
import { actingOperator } from '../actor';

export const pauseQueue: Handler<'pauseQueue'> = async (ctx) => ({
  status: 200,
  body: await ctx.services.queues.pause(ctx.params.name, actingOperator(ctx)),
});
