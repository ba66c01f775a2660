import type { Handler } from '../types';
import { logoutOthers } from '../../src/accounts/sign-in';
import { problems } from '../../src/http/problem';

/** 200 `{revoked}`: every other session of the user is revoked; this one stays. */
export const logoutAll: Handler<'logoutAll'> = async (ctx) => {
  if (!ctx.caller) throw problems.unauthenticated();
  const revoked = await logoutOthers(ctx.app, ctx.caller, { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent });
  return { status: 200, body: { revoked } };
};
