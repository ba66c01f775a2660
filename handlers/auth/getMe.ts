import type { Handler } from '../types';
import { accountView } from '../../src/accounts/me';
import { problems } from '../../src/http/problem';
import { toApiUser } from './session-reply';

/** The signed-in user, as read with the session (no further database round trip). */
export const getMe: Handler<'getMe'> = (ctx) => {
  if (!ctx.caller) throw problems.unauthenticated();
  return { status: 200, body: toApiUser(accountView(ctx.caller.user)) };
};
