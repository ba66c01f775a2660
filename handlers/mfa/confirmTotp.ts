import type { Handler } from '../../src/http/handler-types';
import { recoveryCodeSet } from './views';

/** 200 the first recovery codes: the authenticator app is on. */
export const confirmTotp: Handler<'confirmTotp'> = async ({ services, caller, body, meta }) => ({
  status: 200,
  body: recoveryCodeSet(await services.totp.confirm(caller.userId, body.code, meta)),
});
