import type { Handler } from '../../src/http/handler-types';
import { ceremonyReply } from './views';

/** 200 request options over the caller's passkeys and a `verification` ceremony token (a step-up proof). */
export const startPasskeyVerification: Handler<'startPasskeyVerification'> = async ({ services, caller }) => ({
  status: 200,
  body: ceremonyReply(await services.passkeys.startVerification(caller.userId)),
});
