import type { Handler } from '../types';
import { requestPasswordReset } from '../../src/accounts/password-change';

/** Always 202 with the same body, whether or not the address has an account. */
export const forgotPassword: Handler<'forgotPassword'> = async (ctx) => {
  const meta = { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent };
  const { codeExpiresIn } = await requestPasswordReset(ctx.app, ctx.body.email, meta);
  return { status: 202, body: { accepted: true, code_expires_in: codeExpiresIn } };
};
