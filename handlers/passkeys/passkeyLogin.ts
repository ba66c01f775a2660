import type { Handler } from '../../src/http/handler-types';
import { sessionReply } from '../auth/views';

/** 200 LoginSuccess: a passkey satisfies both factors. */
export const passkeyLogin: Handler<'passkeyLogin'> = async ({ app, services, body, meta }) => {
  const issued = await services.signIn.withPasskey(
    { ceremonyToken: body.ceremony_token, credential: body.credential as Record<string, unknown>, transport: body.transport ?? 'cookie' },
    meta,
  );
  const reply = sessionReply(app.config, issued, app.now());
  return { status: 200, body: reply.body, headers: reply.headers };
};
