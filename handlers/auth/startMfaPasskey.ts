import type { Handler } from '../../src/http/handler-types';
import { ceremonyReply } from '../passkeys/views';

/** 200 PasskeyCeremony (purpose `mfa`) for a sign-in challenge. */
export const startMfaPasskey: Handler<'startMfaPasskey'> = async ({ services, body }) => ({
  status: 200,
  body: ceremonyReply(await services.signIn.startPasskeyFactor(body.challenge_token)),
});
