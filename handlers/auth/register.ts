import type { Handler } from '../types';
import { register as registerAccount } from '../../src/accounts/sign-in';
import { requireJsonBody, sessionReply } from './session-reply';

/** 201 LoginSuccess: the account is created (email unverified, code mailed) and signed in. */
export const register: Handler<'register'> = async (ctx) => {
  const { app, body } = ctx;
  requireJsonBody(ctx.req);
  const meta = { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent };
  const issued = await registerAccount(app, { email: body.email, password: body.password, name: body.name, transport: body.transport }, meta);
  const reply = sessionReply(app.config, issued, app.now());
  return { status: 201, body: reply.body, headers: reply.headers };
};
