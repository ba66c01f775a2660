// The mail transport: SMTP through nodemailer when SMTP_URL is set, else a `log` transport that
// only logs that a message went out: to whom, with which subject. Bodies (they may hold one-time codes) are never logged.
import nodemailer, { type Transporter } from 'nodemailer';
import type { Logger } from '../logger';
import { inSpan, tracingEnabled } from '../platform/tracing';
import type { Metrics } from '../platform/metrics';

export interface MailContent {
  subject: string;
  text: string;
  html: string;
}

export interface MailMessage extends MailContent {
  to: string;
}

export interface MailSettings {
  smtpUrl: string | null;
  from: string;
  /** `log` sends nothing; production refuses it unless asked for explicitly (config.ts). */
  transport?: 'smtp' | 'log';
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
    private readonly metrics: Pick<Metrics, 'mail'>,
  ) {
    const transport = settings.transport ?? (settings.smtpUrl ? 'smtp' : 'log');
    this.transporter = transport === 'smtp' && settings.smtpUrl ? createSmtpTransport(settings.smtpUrl) : null;
  }

  describe(): MailDescription {
    if (!this.transporter) {
      return { transport: 'log', host: null, port: null, secure: false, from: this.settings.from, configured: false, auth: false };
    }
    const url = new URL(this.settings.smtpUrl!);
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

  get transport(): 'smtp' | 'log' {
    return this.transporter ? 'smtp' : 'log';
  }

  /** Sends the message (SMTP) or logs that it would have (log). Throws when the SMTP server refuses it. */
  async send(message: MailMessage, jobRunId: number | null): Promise<{ messageId: string | null }> {
    if (!this.transporter) {
      this.logger.info('mail (log transport, not sent)', { to: message.to, subject: message.subject, job_run_id: jobRunId });
      return { messageId: null };
    }
    const info = await this.sendSmtp(this.transporter, message).catch((err: unknown) => {
      this.metrics.mail.labels('failed').inc();
      throw err;
    });
    this.metrics.mail.labels('sent').inc();
    return { messageId: info.messageId ?? null };
  }

  /**
   * nodemailer has no OpenTelemetry instrumentation: the send is a span of its own (under the job's),
   * naming the server only, never the addresses, subject or body. With tracing off, just the send.
   */
  private sendSmtp(transporter: Transporter, message: MailMessage) {
    const send = () => transporter.sendMail({ from: this.settings.from, ...message });
    if (!tracingEnabled) return send();
    const { host, port } = this.describe();
    return inSpan('smtp send', { kind: 'client', attributes: { 'server.address': host ?? '', 'server.port': port ?? 0, 'network.protocol.name': 'smtp' } }, send);
  }

  close(): void {
    this.transporter?.close();
  }
}
