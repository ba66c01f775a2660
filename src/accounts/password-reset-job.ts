// Forgot-password's work, done by a job so the request does the same thing for every address.
import type { JobKind } from '../jobs/kinds';
import { PASSWORD_RESET_KIND, type PasswordResetPayload, type PasswordResetService } from './password-reset';

export const passwordResetSend: JobKind<{ services: { passwordReset: PasswordResetService } }, PasswordResetPayload> = {
  name: PASSWORD_RESET_KIND,
  description: 'Looks up the account of a forgot-password request and, if there is one, mails it a reset code.',
  defaults: { enabled: true, max_attempts: 5, priority: 0, queue: 'mail', schedule: null, timeout: '1m0s' },
  needsPayload: true,
  async handle(payload, ctx) {
    const outcome = await ctx.app.services.passwordReset.sendCode(payload);
    ctx.logger.debug('password reset request handled', { run_id: ctx.run.id, outcome });
  },
};
