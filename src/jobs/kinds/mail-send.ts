import type { AppContext } from '../../app-context';
import type { MailMessage } from '../../mail/mailer';
import type { JobKind } from '../kinds';

/** Every email goes through this kind, so each one is a visible, retried, recorded run. */
export const mailSend: JobKind<AppContext, MailMessage> = {
  name: 'service.mail.send',
  description: 'Sends one email (SMTP, or the log transport when none is configured) and records it.',
  defaults: { enabled: true, max_attempts: 5, priority: 0, queue: 'mail', schedule: null, timeout: '1m0s' },
  needsPayload: true,
  async handle(message, { services, run }) {
    await services.mailer.send(services.db, message, run.id);
  },
};
