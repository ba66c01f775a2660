import type { Handler } from '../types';
import { resetPassword as reset } from '../../src/accounts/password-change';

/** 204: the password is set and every session revoked; no session is created. */
export const resetPassword: Handler<'resetPassword'> = async (ctx) => {
  await reset(ctx.app, {
    email: ctx.body.email,
    code: ctx.body.code,
    newPassword: ctx.body.new_password,
    meta: { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent },
  });
  return { status: 204, body: undefined };
};
