import type { Handler } from '../types';
import { verifyEmail as verifyEmailCode } from '../../src/accounts/email-verification';
import { accountView } from '../../src/accounts/me';
import { problems } from '../../src/http/problem';
import { toApiUser } from './session-reply';

/** 200 with the updated user (`email_verified: true`). */
export const verifyEmail: Handler<'verifyEmail'> = async (ctx) => {
  if (!ctx.caller) throw problems.unauthenticated();
  const meta = { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent };
  const user = await verifyEmailCode(ctx.app, ctx.caller.userId, ctx.body.code, meta);
  return { status: 200, body: toApiUser(accountView(user)) };
};
