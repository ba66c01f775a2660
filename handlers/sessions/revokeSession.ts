import type { Handler } from '../../src/http/handler-types';
import { clearSessionCookie } from '../auth/views';

/** 204; revoking the current session works like logout (the cookie is cleared). 404 for anything not the caller's and live. */
export const revokeSession: Handler<'revokeSession'> = async ({ app, services, caller, params, meta }) => {
  const { current } = await services.sessions.revokeOwn(caller, params.id, meta);
  return { status: 204, body: undefined, headers: current ? clearSessionCookie(app.config) : {} };
};
