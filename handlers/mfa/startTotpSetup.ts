import type { Handler } from '../../src/http/handler-types';

/** 200 a pending secret, as base32 and as an otpauth:// URL. */
export const startTotpSetup: Handler<'startTotpSetup'> = async ({ services, caller }) => {
  const setup = await services.totp.startSetup(caller.user);
  return { status: 200, body: { secret: setup.secret, otpauth_url: setup.otpauthUrl, expires_at: setup.expiresAt.toISOString() } };
};
