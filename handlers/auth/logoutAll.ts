import type { Handler } from '../../src/http/handler-types';

/** 200 `{revoked}`: every other session of the user is revoked; this one stays. */
export const logoutAll: Handler<'logoutAll'> = async ({ services, caller, meta }) => {
  const revoked = await services.sessions.logoutOthers(caller, meta);
  return { status: 200, body: { revoked } };
};
