import type { Handler } from '../../src/http/handler-types';
import { actingOperator } from '../actor';
import { toApiRun } from './views';

export const retryJobRun: Handler<'retryJobRun'> = async (ctx) => ({
  status: 200,
  body: toApiRun(await ctx.services.jobRuns.retry(ctx.params.id, actingOperator(ctx))),
});
