import type { Handler } from '../../src/http/handler-types';

/** 204: the password is set and every session revoked; no session is created. */
export const resetPassword: Handler<'resetPassword'> = async ({ services, body, meta }) => {
  await services.passwordReset.reset({ email: body.email, code: body.code, newPassword: body.new_password }, meta);
  return { status: 204, body: undefined };
};
