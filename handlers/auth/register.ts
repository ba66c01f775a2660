import type { Handler } from '../../src/http/handler-types';
import { sessionReply } from './views';

/** 201 LoginSuccess: the account is created (email unverified, code mailed) and signed in. */
export const register: Handler<'register'> = async ({ app, services, body, meta }) => {
  const issued = await services.signIn.register({ email: body.email, password: body.password, name: body.name, transport: body.transport }, meta);
  const reply = sessionReply(app.config, issued, app.now());
  return { status: 201, body: reply.body, headers: reply.headers };
};
