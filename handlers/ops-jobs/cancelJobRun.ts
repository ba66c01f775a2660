import type { Handler } from '../../src/http/handler-types';
import { actingOperator } from '../actor';
import { toApiRun } from './views';

/** 200 when a waiting run is cancelled at once; 202 when a running run has been signalled. */
export const cancelJobRun: Handler<'cancelJobRun'> = async (ctx) => {
  const { run, accepted } = await ctx.services.jobRuns.cancel(ctx.params.id, actingOperator(ctx));
  return accepted ? { status: 202, body: toApiRun(run) } : { status: 200, body: toApiRun(run) };
};
