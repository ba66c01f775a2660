import type { Handler } from '../../src/http/handler-types';
import { actingOperator } from '../actor';

export const resumeQueue: Handler<'resumeQueue'> = async (ctx) => ({
  status: 200,
  body: await ctx.services.queues.resume(ctx.params.name, actingOperator(ctx)),
});
