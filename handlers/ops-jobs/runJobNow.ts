import type { Handler } from '../../src/http/handler-types';
import { actingOperator } from '../actor';
import { toApiRun } from './views';

export const runJobNow: Handler<'runJobNow'> = async (ctx) => ({
  status: 202,
  body: toApiRun(await ctx.services.jobDefinitions.runNow(ctx.params.name, actingOperator(ctx))),
});
