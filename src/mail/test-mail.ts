// The operator's test email: queued through `service.mail.send` like every other email, so a
// completed run proves the whole path (outbox → BullMQ → worker → transport) works.
import type { AppContext } from '../app-context';
import { recordAudit, type Actor, type RequestMeta } from '../audit/store';
import type { JobRun } from '../jobs/store';
import type { MailMessage } from './mailer';
import { templates } from './templates';

export const MAIL_SEND_KIND = 'service.mail.send';

/** Writes the run and the audit event `ops.mail.test_sent` in one transaction, then hands the run over. */
export async function sendTestMail(app: AppContext, to: string, by: { actor: Actor; meta: RequestMeta }): Promise<JobRun> {
  const message: MailMessage = { to, ...templates.test({ to, requestedBy: by.actor.id, at: app.now().toISOString() }) };
  const run = await app.db.transaction(async (trx) => {
    const created = await app.jobs.enqueue(trx, MAIL_SEND_KIND, { ...message }, by);
    await recordAudit(trx, {
      action: 'ops.mail.test_sent',
      actor: by.actor,
      target: { kind: 'job_run', id: String(created.id) },
      data: { to, job_run_id: created.id },
      meta: by.meta,
    });
    return created;
  });
  await app.jobs.handOver([run]);
  return run;
}
