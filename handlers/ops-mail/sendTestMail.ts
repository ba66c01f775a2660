import type { Handler } from '../types';
import { actingOperator } from '../actor';
import { toApiRun } from '../ops-jobs/mappers';

/** 202 with the queued `service.mail.send` run; delivery shows in the run's state. */
export const sendTestMail: Handler<'sendTestMail'> = async (ctx) => {
  const run = await ctx.services.mail.sendTest(ctx.body.to, actingOperator(ctx));
  return { status: 202, body: { job_run_id: run.id, run: toApiRun(run) } };
};
