import type { Handler } from '../types';
import { logout as signOut } from '../../src/accounts/sign-in';
import { problems } from '../../src/http/problem';
import { clearSessionCookie } from './session-reply';

/** 204: this session is revoked and the session cookie cleared. */
export const logout: Handler<'logout'> = async (ctx) => {
  if (!ctx.caller) throw problems.unauthenticated();
  await signOut(ctx.app, ctx.caller, { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent });
  return { status: 204, body: undefined, headers: clearSessionCookie(ctx.app.config) };
};
