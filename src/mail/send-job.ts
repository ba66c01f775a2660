// Every email goes through this kind, so each one is a visible, retried, recorded run.
import type { JobKind } from '../jobs/kinds';
import { MAIL_SEND_KIND, type MailJobPayload, type MailService } from './service';

export const mailSend: JobKind<{ services: { mail: MailService } }, MailJobPayload> = {
  name: MAIL_SEND_KIND,
  description: 'Sends one email (SMTP, or the log transport when none is configured) and records it with its secrets masked.',
  defaults: { enabled: true, max_attempts: 5, priority: 0, queue: 'mail', schedule: null, timeout: '1m0s' },
  needsPayload: true,
  async handle(payload, ctx) {
    await ctx.app.services.mail.deliver(payload, ctx.run.id);
  },
};
