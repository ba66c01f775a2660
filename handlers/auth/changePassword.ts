import type { Handler } from '../../src/http/handler-types';

/** 200 `{revoked_sessions}`: the password is changed and every other session revoked. */
export const changePassword: Handler<'changePassword'> = async ({ services, caller, body, meta }) => {
  const { revokedSessions } = await services.accounts.changePassword(
    { userId: caller.userId, sessionId: caller.sessionId, currentPassword: body.current_password, newPassword: body.new_password },
    meta,
  );
  return { status: 200, body: { revoked_sessions: revokedSessions } };
};
