import type { Handler } from '../../src/http/handler-types';

/** 202 `{sent, expires_at}`: a new code is mailed and the old one dies. */
export const resendVerificationEmail: Handler<'resendVerificationEmail'> = async ({ services, caller, meta }) => {
  const { expiresAt } = await services.emailVerification.resend(caller, meta);
  return { status: 202, body: { sent: true, expires_at: expiresAt.toISOString() } };
};
