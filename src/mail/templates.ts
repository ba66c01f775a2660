// Mail templates: each renders a subject, a text body and an HTML body from its parameters.
// Secrets (one-time codes) go only into bodies, never into subjects (subjects are logged, shown in
// notifications and lock screens). `render` renders a message with its secrets, for sending, or
// with them masked, for the stored copy.
import type { MailContent } from './mailer';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function layout(title: string, paragraphs: string[]): string {
  const body = paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n    ');
  return `<!doctype html>
<html lang="en">
  <head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
  <body style="font-family: sans-serif; line-height: 1.5">
    <h1 style="font-size: 1.25em">${escapeHtml(title)}</h1>
    ${body}
  </body>
</html>
`;
}

const message = (subject: string, title: string, lines: string[]): MailContent => ({ subject, text: `${lines.join('\n\n')}\n`, html: layout(title, lines) });

/** Shown instead of a secret in the stored copy of a message. */
const REDACTED = '[redacted]';

const templates = {
  verifyEmail: (p: { minutes: number; code: string }) =>
    message('Confirm your email address', 'Confirm your email address', [
      `Your verification code is ${p.code}.`,
      `Enter it in the app within ${p.minutes} minutes to confirm this email address.`,
      'If you did not create an account, ignore this email.',
    ]),
  passwordReset: (p: { minutes: number; code: string }) =>
    message('Reset your password', 'Reset your password', [
      `Your password reset code is ${p.code}.`,
      `It is valid for ${p.minutes} minutes.`,
      'If you did not ask to reset your password, ignore this email: your password has not changed.',
    ]),
  passwordChanged: (p: { at: string }) =>
    message('Your password was changed', 'Your password was changed', [
      `The password of your account was changed at ${p.at}.`,
      'Every other signed-in device was signed out.',
      'If this was not you, reset your password now and contact support.',
    ]),
  invitation: (p: { orgName: string; invitedBy: string; role: string; days: number; link: string }) =>
    message(`You are invited to join ${p.orgName}`, `Join ${p.orgName}`, [
      `${p.invitedBy} invited you to join ${p.orgName} as ${p.role === 'admin' ? 'an admin' : 'a member'}.`,
      `Accept the invitation within ${p.days} days: ${p.link}`,
      'Sign in with this email address to accept it. If you did not expect this invitation, ignore this email.',
    ]),
  test: (p: { requestedBy: string | null; at: string }) =>
    message('Tenant API test email', 'Tenant API test email', [
      'This is a test email from Tenant API.',
      'If you can read it, outgoing mail works: it went through the same job queue as every other email.',
      `Requested ${p.requestedBy ? `by operator ${p.requestedBy} ` : ''}at ${p.at}.`,
    ]),
};

export type TemplateName = keyof typeof templates;

/** The parameters of each template that are secrets (they travel under a run's `secret`). */
export const templateSecrets: Record<TemplateName, string[]> = {
  verifyEmail: ['code'],
  passwordReset: ['code'],
  passwordChanged: [],
  invitation: ['link'],
  test: [],
};
/** Parameter names that are secrets in every template that has them. */
type SecretParam = 'code' | 'link';
type ParamsOf<T extends TemplateName> = Parameters<(typeof templates)[T]>[0];

/** What a mail job carries: the template, its plain parameters and, apart, its secrets. */
export type TemplatedMail = {
  [T in TemplateName]: { template: T; params: Omit<ParamsOf<T>, SecretParam>; secret?: Pick<ParamsOf<T>, Extract<keyof ParamsOf<T>, SecretParam>> };
}[TemplateName];

export function isTemplateName(name: unknown): name is TemplateName {
  return typeof name === 'string' && Object.hasOwn(templates, name);
}

/** The message with its secrets (for sending) or with each secret masked (for the stored copy). */
export function render(mail: { template: TemplateName; params: object; secret?: Record<string, string> }, withSecrets: boolean): MailContent {
  const secret = Object.fromEntries(Object.keys(mail.secret ?? {}).map((k) => [k, withSecrets ? mail.secret![k]! : REDACTED]));
  return (templates[mail.template] as (p: object) => MailContent)({ ...mail.params, ...secret });
}
