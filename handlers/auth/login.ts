import type { Handler } from '../types';
import { sessionReply } from './session-reply';

/** 200 LoginSuccess (users have no second factor yet, so never 202 for now). */
export const login: Handler<'login'> = async ({ app, services, body, meta }) => {
  const issued = await services.accounts.login({ email: body.email, password: body.password, transport: body.transport }, meta);
  const reply = sessionReply(app.config, issued, app.now());
  return { status: 200, body: reply.body, headers: reply.headers };
};
