import type { Handler } from '../types';
import { login as signIn } from '../../src/accounts/sign-in';
import { requireJsonBody, sessionReply } from './session-reply';

/** 200 LoginSuccess (users have no second factor yet, so never 202 for now). */
export const login: Handler<'login'> = async (ctx) => {
  const { app, body } = ctx;
  requireJsonBody(ctx.req);
  const meta = { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent };
  const issued = await signIn(app, { email: body.email, password: body.password, transport: body.transport }, meta);
  const reply = sessionReply(app.config, issued, app.now());
  return { status: 200, body: reply.body, headers: reply.headers };
};
