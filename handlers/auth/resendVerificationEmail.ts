import type { Handler } from '../types';
import { resendVerification } from '../../src/accounts/email-verification';
import { problems } from '../../src/http/problem';

export const resendVerificationEmail: Handler<'resendVerificationEmail'> = async (ctx) => {
  if (!ctx.caller) throw problems.unauthenticated();
  const meta = { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent };
  const { expiresAt } = await resendVerification(ctx.app, ctx.caller.userId, meta);
  return { status: 202, body: { sent: true, expires_at: expiresAt.toISOString() } };
};
