// mail_messages: the only file with SQL for mail records. Each record is what went out, with any
// secret masked (see templates.ts); erased records keep only that a message was sent.
import { deleteInBatches } from '../platform/batches';
import type { Db } from '../platform/database';


export interface MailRecord {
  jobRunId: number | null;
  to: string;
  template: string;
  subject: string;
  text: string;
  html: string;
  transport: 'smtp' | 'log';
  messageId: string | null;
}

const ERASED_ADDRESS = '[erased]';

export async function insertMailRecord(db: Db, record: MailRecord): Promise<void> {
  await db('mail_messages').insert({
    job_run_id: record.jobRunId,
    to: record.to,
    template: record.template,
    subject: record.subject,
    text: record.text,
    html: record.html,
    transport: record.transport,
    message_id: record.messageId,
  });
}

/** Deletes records sent before `before`, `batch` rows a statement; how many. */
export async function deleteSentBefore(db: Db, before: Date, batch: number): Promise<number> {
  return deleteInBatches(db, 'mail_messages', (q) => q.where('sent_at', '<', before), batch);
}

/** Removes an address and the bodies sent to it from every record; how many. */
export async function eraseAddress(db: Db, email: string): Promise<number> {
  return db('mail_messages').whereRaw('lower("to") = lower(?)', [email]).update({ to: ERASED_ADDRESS, text: '', html: '' });
}
