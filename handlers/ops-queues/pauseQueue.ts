import type { Handler } from '../../src/http/handler-types';
import { actingOperator } from '../actor';

export const pauseQueue: Handler<'pauseQueue'> = async (ctx) => ({
  status: 200,
  body: await ctx.services.queues.pause(ctx.params.name, actingOperator(ctx)),
});
