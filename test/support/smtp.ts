// A real SMTP server inside the test process (smtp-server): it speaks SMTP to nodemailer over TCP
// on 127.0.0.1, records every message it accepts, and can be told to refuse messages or be stopped.
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { startTestApp } from './test-app';

export interface ReceivedMail {
  /** MAIL FROM of the envelope. */
  from: string | null;
  /** RCPT TO of the envelope. */
  to: string[];
  /** Header fields (lower-case names, unfolded, RFC 2047 words decoded). */
  headers: Record<string, string>;
  subject: string;
  raw: string;
}

interface Refusal {
  code: number;
  message: string;
  /** How many more messages to refuse; Infinity until `acceptAll()`. */
  remaining: number;
}

export class TestSmtpServer {
  readonly messages: ReceivedMail[] = [];
  /** Messages refused so far (each a failed delivery attempt seen by the server). */
  refusedCount = 0;
  private refusal: Refusal | null = null;
  private stopped = false;

  private constructor(
    private readonly server: SMTPServer,
    readonly port: number,
  ) {}

  static async start(): Promise<TestSmtpServer> {
    let self: TestSmtpServer | null = null;
    const server = new SMTPServer({
      // The certificate bundled with smtp-server has expired: offer no STARTTLS, plain SMTP only.
      disabledCommands: ['STARTTLS'],
      authOptional: true,
      logger: false,
      closeTimeout: 1_000,
      onData(stream, session, callback) {
        self!.receive(stream, session, callback);
      },
    });
    server.on('error', () => undefined);
    const port = await new Promise<number>((resolve, reject) => {
      const net = server.listen(0, '127.0.0.1', () => resolve((net.address() as AddressInfo).port));
      net.once('error', reject);
    });
    self = new TestSmtpServer(server, port);
    return self;
  }

  /** The SMTP_URL that reaches this server. */
  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** Refuses the next `times` messages (all of them by default) with `code` after their data. */
  refuse(opts: { code?: number; message?: string; times?: number } = {}): void {
    const code = opts.code ?? 451;
    this.refusal = { code, message: opts.message ?? (code >= 500 ? 'Mailbox unavailable' : 'Try again later'), remaining: opts.times ?? Infinity };
  }

  acceptAll(): void {
    this.refusal = null;
  }

  /** Resolves with the first accepted message matching `match`, waiting up to `timeoutMs`. */
  async waitForMessage(match: (m: ReceivedMail) => boolean = () => true, timeoutMs = 10_000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching message reached the SMTP server within ${timeoutMs} ms (${this.messages.length} received)`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private receive(stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null) => void): void {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', (err) => callback(err));
    stream.on('end', () => {
      const refusal = this.refusal;
      if (refusal && refusal.remaining > 0) {
        refusal.remaining -= 1;
        this.refusedCount += 1;
        const err = Object.assign(new Error(refusal.message), { responseCode: refusal.code });
        return callback(err);
      }
      const raw = Buffer.concat(chunks).toString('utf8');
      const headers = parseHeaders(raw);
      this.messages.push({
        from: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
        to: session.envelope.rcptTo.map((r) => r.address),
        headers,
        subject: headers.subject ?? '',
        raw,
      });
      callback();
    });
  }
}

/** Header block of an RFC 5322 message: unfolds continuation lines, decodes encoded words. */
export function parseHeaders(raw: string): Record<string, string> {
  const end = raw.search(/\r?\n\r?\n/);
  const block = end === -1 ? raw : raw.slice(0, end);
  const headers: Record<string, string> = {};
  for (const line of block.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!(name in headers)) headers[name] = decodeWords(line.slice(colon + 1).trim());
  }
  return headers;
}

function decodeWords(value: string): string {
  return value
    .replace(/(=\?[^?]+\?[bBqQ]\?[^?]*\?=)\s+(?==\?)/g, '$1') // whitespace between encoded words is not content
    .replace(/=\?([^?]+)\?([bBqQ])\?([^?]*)\?=/g, (_m, charset: string, enc: string, text: string) => {
      const bytes =
        enc.toUpperCase() === 'B'
          ? Buffer.from(text, 'base64')
          : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_x, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1');
      return new TextDecoder(/^utf-?8$/i.test(charset) ? 'utf-8' : charset).decode(bytes);
    });
}

/** A test app with job workers whose mail goes to a fresh SMTP peer; `close` stops both. */
export async function startAppWithSmtp(env: Record<string, string> = {}) {
  const smtp = await TestSmtpServer.start();
  const t = await startTestApp({ ...env, SMTP_URL: smtp.url }, { workers: true });
  return {
    t,
    smtp,
    async close() {
      await t.close();
      await smtp.stop();
    },
  };
}

/** The 6-digit code a message carries in its body ("… code is 123456."): never in its subject. */
export function codeIn(message: ReceivedMail): string {
  const code = /code is (\d{6})\./.exec(message.raw)?.[1];
  if (!code) throw new Error(`no code in the message "${message.subject}"`);
  return code;
}
