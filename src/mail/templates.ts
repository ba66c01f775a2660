// Mail templates: each renders a subject, a text body and an HTML body from its parameters.
import type { MailMessage } from './mailer';

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

export const templates = {
  verifyEmail: (p: { code: string; minutes: number }): Omit<MailMessage, 'to'> => {
    const lines = [`Your verification code is ${p.code}.`, `Enter it in the app within ${p.minutes} minutes to confirm this email address.`, "If you did not create an account, ignore this email."];
    return { subject: `Your verification code: ${p.code}`, text: `${lines.join('\n\n')}\n`, html: layout('Confirm your email address', lines) };
  },
  passwordReset: (p: { code: string; minutes: number }): Omit<MailMessage, 'to'> => {
    const lines = [`Your password reset code is ${p.code}.`, `It is valid for ${p.minutes} minutes.`, 'If you did not ask to reset your password, ignore this email: your password has not changed.'];
    return { subject: `Your password reset code: ${p.code}`, text: `${lines.join('\n\n')}\n`, html: layout('Reset your password', lines) };
  },
  passwordChanged: (p: { at: string }): Omit<MailMessage, 'to'> => {
    const lines = [`The password of your account was changed at ${p.at}.`, 'Every other signed-in device was signed out.', 'If this was not you, reset your password now and contact support.'];
    return { subject: 'Your password was changed', text: `${lines.join('\n\n')}\n`, html: layout('Your password was changed', lines) };
  },
  test: (p: { to: string; requestedBy: string | null; at: string }): Omit<MailMessage, 'to'> => {
    const lines = [
      'This is a test email from Tenant API.',
      'If you can read it, outgoing mail works: it went through the same job queue as every other email.',
      `Requested ${p.requestedBy ? `by operator ${p.requestedBy} ` : ''}at ${p.at}.`,
    ];
    return { subject: 'Tenant API test email', text: `${lines.join('\n\n')}\n`, html: layout('Tenant API test email', lines) };
  },
};

export type TemplateName = keyof typeof templates;
