import type { Handler } from '../../src/http/handler-types';
import { clearSessionCookie } from './views';

/** 204: this session is revoked and the session cookie cleared. */
export const logout: Handler<'logout'> = async ({ app, services, caller, meta }) => {
  await services.sessions.logout(caller, meta);
  return { status: 204, body: undefined, headers: clearSessionCookie(app.config) };
};
