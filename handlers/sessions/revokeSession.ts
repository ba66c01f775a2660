import type { Handler } from '../types';
import { revokeOwnSession } from '../../src/accounts/sign-in';
import { problems } from '../../src/http/problem';
import { clearSessionCookie } from '../auth/session-reply';

/** 204; revoking the current session works like logout (the cookie is cleared). 404 for anything not the caller's and live. */
export const revokeSession: Handler<'revokeSession'> = async (ctx) => {
  if (!ctx.caller) throw problems.unauthenticated();
  const { current } = await revokeOwnSession(ctx.app, ctx.caller, ctx.params.id, { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent });
  return { status: 204, body: undefined, headers: current ? clearSessionCookie(ctx.app.config) : {} };
};
