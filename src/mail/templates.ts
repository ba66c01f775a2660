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
