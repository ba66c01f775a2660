import type { Handler } from '../../src/http/handler-types';
import { sessionReply } from './views';
import { toPasskeyProof } from './proof';

/** 200 LoginSuccess: the challenge is finished with exactly one second factor (the body's oneOf). */
export const completeMfaLogin: Handler<'completeMfaLogin'> = async ({ app, services, body, meta }) => {
  const factor =
    'passkey' in body ? { passkey: toPasskeyProof(body.passkey) } : 'recovery_code' in body ? { recoveryCode: body.recovery_code } : { code: body.code };
  const issued = await services.signIn.completeChallenge({ challengeToken: body.challenge_token, factor, transport: body.transport }, meta);
  const reply = sessionReply(app.config, issued, app.now());
  return { status: 200, body: reply.body, headers: reply.headers };
};
