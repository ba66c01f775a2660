import type { Handler } from '../../src/http/handler-types';
import { creationCeremonyReply } from './views';

/** 200 creation options and a `registration` ceremony token. */
export const startPasskeyRegistration: Handler<'startPasskeyRegistration'> = async ({ services, caller, body }) => ({
  status: 200,
  body: creationCeremonyReply(await services.passkeys.startRegistration(caller.user, body?.name)),
});
