import type { Handler } from '../../src/http/handler-types';
import { accountView } from '../../src/accounts/me';
import { toApiUser } from './views';

/** 200 with the updated user (`email_verified: true`). */
export const verifyEmail: Handler<'verifyEmail'> = async ({ services, caller, body, meta }) => {
  const user = await services.emailVerification.verify(caller, body.code, meta);
  return { status: 200, body: toApiUser(accountView(user)) };
};
