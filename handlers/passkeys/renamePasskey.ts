import type { Handler } from '../../src/http/handler-types';
import { toApiPasskey } from './views';

/** 200 the renamed passkey. */
export const renamePasskey: Handler<'renamePasskey'> = async ({ services, caller, params, body, meta }) => ({
  status: 200,
  body: toApiPasskey(await services.passkeys.rename(caller.userId, params.id, body.name, meta)),
});
