import type { Handler } from '../../src/http/handler-types';
import { toApiPasskey } from './views';

/** 201 the new passkey. */
export const addPasskey: Handler<'addPasskey'> = async ({ services, caller, body, meta }) => {
  const passkey = await services.passkeys.add(caller.userId, { ceremonyToken: body.ceremony_token, credential: body.credential as Record<string, unknown>, name: body.name }, meta);
  return { status: 201, body: toApiPasskey(passkey) };
};
