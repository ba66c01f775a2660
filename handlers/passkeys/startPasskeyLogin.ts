import type { Handler } from '../../src/http/handler-types';
import { ceremonyReply } from './views';

/** 200 request options for discoverable credentials and a `login` ceremony token. */
export const startPasskeyLogin: Handler<'startPasskeyLogin'> = async ({ services }) => ({
  status: 200,
  body: ceremonyReply(await services.passkeys.startSignIn()),
});
