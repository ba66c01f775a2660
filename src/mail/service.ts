// Mail as the other domains use it. Every email is a `service.mail.send` job run queued on the
// services' database handle (in the caller's transaction, so it goes out only if the change
// commits). The run's payload carries the template, its plain parameters and, under `secret`, the
// one-time code; the job system drops `secret` from the payload when the run is final. The stored
// copy in mail_messages has every secret masked. Subjects never hold a secret.
import type { Actor, RequestMeta } from '../audit/service';
import type { Mailer } from './mailer';
import type { Scope } from '../platform/scope';
import type { JobOutbox } from '../jobs/outbox';
import type { AuditService } from '../audit/service';
import type { QueuesService } from '../jobs/queues';
import type { JobRun } from '../jobs/run-lifecycle-store';
import { UnrecoverableError } from '../jobs/kinds';
import { isTemplateName, render, templateSecrets, type TemplatedMail } from './templates';
import * as store from './store';

export const MAIL_SEND_KIND = 'service.mail.send';

/** The payload of a `service.mail.send` run. */
export type MailJobPayload = TemplatedMail & { to: string };

type Deps = Scope<{ mailer: Mailer; outbox: JobOutbox; audit: AuditService; queues: QueuesService; mail: MailService }>;

export class MailService {
  constructor(private readonly s: Deps) {}

  /** Queues one email; it is sent after the surrounding transaction commits. */
  queue(to: string, mail: TemplatedMail, by: { actor: Actor; meta?: RequestMeta }): Promise<JobRun> {
    const payload: MailJobPayload = { to, ...mail };
    return this.s.outbox.enqueue(MAIL_SEND_KIND, payload, by);
  }

  /** The job's work: renders with secrets, sends, and records the message with its secrets masked. */
  async deliver(payload: MailJobPayload, jobRunId: number): Promise<void> {
    if (!isTemplateName(payload.template)) throw new UnrecoverableError(`unknown mail template ${String(payload.template)}`);
    // An operator's retry of a run that had ended: its code was cleared with it, and a new code
    // is the user's to ask for (no mail with a placeholder instead of the code).
    const missing = templateSecrets[payload.template].filter((name) => !payload.secret?.[name as keyof typeof payload.secret]);
    if (missing.length) throw new UnrecoverableError(`the message's ${missing.join(', ')} was cleared when its run ended; it cannot be sent again`);
    const mailer = this.s.mailer;
    const { messageId } = await mailer.send({ to: payload.to, ...render(payload, true) }, jobRunId);
    const stored = render(payload, false);
    await store.insertMailRecord(this.s.db, { jobRunId, to: payload.to, template: payload.template, ...stored, transport: mailer.transport, messageId });
  }

  /**
   * POST /ops/mail/test: queues the test email and writes `ops.mail.test_sent` in one transaction.
   * An operator testing mail while its queue is paused would otherwise wait for an email that
   * cannot come: `queuePaused` tells them.
   */
  async sendTest(to: string, by: { actor: Actor; meta: RequestMeta }): Promise<{ run: JobRun; queuePaused: boolean }> {
    const run = await this.s.transaction(async (tx) => {
      const queued = await tx.mail.queue(to, { template: 'test', params: { requestedBy: by.actor.id, at: tx.now().toISOString() } }, by);
      await tx.audit.record({
        action: 'ops.mail.test_sent',
        actor: by.actor,
        target: { kind: 'job_run', id: String(queued.id) },
        data: { to, job_run_id: queued.id },
        meta: by.meta,
      });
      return queued;
    });
    return { run, queuePaused: await this.s.queues.isPaused(run.queue) };
  }

  describe() {
    return this.s.mailer.describe();
  }

  /**
   * Erasure of a deleted account's address: its mail records keep no address or body, and its
   * mail runs no address (waiting ones are cancelled: nobody is there to receive them).
   */
  async forgetAddress(email: string): Promise<void> {
    await store.eraseAddress(this.s.db, email);
    await this.s.outbox.forgetAddress(email);
  }

  /** Retention: deletes mail records older than 30 days. */
  pruneSent(before: Date): Promise<number> {
    return store.deleteSentBefore(this.s.db, before, 1_000);
  }
}
