// Queue an email inside the caller's transaction (it is sent only if the change commits).
// After the commit, hand the returned run over: `await app.jobs.handOver([run])`.
import type { Knex } from 'knex';
import type { AppContext } from '../app-context';
import type { Actor, RequestMeta } from '../audit/store';
import type { MailMessage } from './mailer';

export function queueMail(trx: Knex | Knex.Transaction, app: AppContext, message: MailMessage, by: { actor: Actor; meta?: RequestMeta }) {
  return app.jobs.enqueue(trx, 'service.mail.send', { ...message }, by);
}
