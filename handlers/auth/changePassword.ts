import type { Handler } from '../types';
import { changePassword as change } from '../../src/accounts/password-change';
import { problems } from '../../src/http/problem';

export const changePassword: Handler<'changePassword'> = async (ctx) => {
  if (!ctx.caller) throw problems.unauthenticated();
  const { revokedSessions } = await change(ctx.app, {
    userId: ctx.caller.userId,
    sessionId: ctx.caller.sessionId,
    currentPassword: ctx.body.current_password,
    newPassword: ctx.body.new_password,
    meta: { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent },
  });
  return { status: 200, body: { revoked_sessions: revokedSessions } };
};
