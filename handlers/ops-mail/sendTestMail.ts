import type { Handler } from '../../src/http/handler-types';
import { actingOperator } from '../actor';
import { toApiRun } from '../ops-jobs/views';

/** 202 with the queued `service.mail.send` run; delivery shows in the run's state. */
export const sendTestMail: Handler<'sendTestMail'> = async (ctx) => {
  const { run, queuePaused } = await ctx.services.mail.sendTest(ctx.body.to, actingOperator(ctx));
  const message = queuePaused
    ? `Queued as job run ${run.id}, but the ${run.queue} queue is paused: the email waits until an operator resumes it (POST /ops/queues/${run.queue}/resume).`
    : `Queued on the ${run.queue} queue as job run ${run.id}: follow it with GET /ops/jobs/runs/${run.id}.`;
  return { status: 202, body: { job_run_id: run.id, run: toApiRun(run), queue_paused: queuePaused, message } };
};
