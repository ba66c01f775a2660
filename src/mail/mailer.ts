// Outgoing mail: SMTP through nodemailer when SMTP_URL is set, else a `log` transport that only
// records. Every message sent (either way) is kept in mail_messages, so operators and tests can
// read what went out; the retention job deletes old records.
import nodemailer, { type Transporter } from 'nodemailer';
import type { Knex } from 'knex';
import type { Logger } from '../logger';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface MailSettings {
  smtpUrl: string | null;
  from: string;
}

export interface MailDescription {
  transport: 'smtp' | 'log';
  host: string | null;
  port: number | null;
  secure: boolean;
  from: string;
  configured: boolean;
  auth: boolean;
}

/** smtp://user:pass@host:587 (STARTTLS when offered) or smtps://…:465; `?requireTLS=true` or `?ignoreTLS=true`. */
function createSmtpTransport(smtpUrl: string): Transporter {
  const url = new URL(smtpUrl);
  const secure = url.protocol === 'smtps:';
  return nodemailer.createTransport({
    host: url.hostname,
    port: Number(url.port) || (secure ? 465 : 587),
    secure,
    auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
    requireTLS: url.searchParams.get('requireTLS') === 'true',
    ignoreTLS: url.searchParams.get('ignoreTLS') === 'true',
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  });
}

export class Mailer {
  private readonly transporter: Transporter | null;

  constructor(
    private readonly settings: MailSettings,
    private readonly logger: Logger,
  ) {
    this.transporter = settings.smtpUrl ? createSmtpTransport(settings.smtpUrl) : null;
  }

  describe(): MailDescription {
    if (!this.settings.smtpUrl) {
      return { transport: 'log', host: null, port: null, secure: false, from: this.settings.from, configured: false, auth: false };
    }
    const url = new URL(this.settings.smtpUrl);
    const secure = url.protocol === 'smtps:';
    return {
      transport: 'smtp',
      host: url.hostname,
      port: Number(url.port) || (secure ? 465 : 587),
      secure,
      from: this.settings.from,
      configured: true,
      auth: Boolean(url.username),
    };
  }

  /** Sends (SMTP) or logs the message, then records it. Throws when the SMTP server refuses it. */
  async send(db: Knex, message: MailMessage, jobRunId: number | null): Promise<{ messageId: string | null }> {
    let messageId: string | null = null;
    if (this.transporter) {
      const info = await this.transporter.sendMail({ from: this.settings.from, ...message });
      messageId = info.messageId ?? null;
    } else {
      this.logger.info('mail (log transport, not sent)', { to: message.to, subject: message.subject });
    }
    await db('mail_messages').insert({
      job_run_id: jobRunId,
      to: message.to,
      subject: message.subject,
      text: message.text,
      html: message.html,
      transport: this.transporter ? 'smtp' : 'log',
      message_id: messageId,
    });
    return { messageId };
  }

  close(): void {
    this.transporter?.close();
  }
}
