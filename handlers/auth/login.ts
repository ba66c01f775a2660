import type { Handler } from '../../src/http/handler-types';
import { challengeReply, sessionReply } from './views';

/** 200 LoginSuccess, or 202 MfaChallenge when the user has a second factor (no session yet). */
export const login: Handler<'login'> = async ({ app, services, body, meta }) => {
  const outcome = await services.signIn.withPassword({ email: body.email, password: body.password, transport: body.transport }, meta);
  if (outcome.kind === 'challenge') return { status: 202, body: challengeReply(outcome.challenge) };
  const reply = sessionReply(app.config, outcome, app.now());
  return { status: 200, body: reply.body, headers: reply.headers };
};
