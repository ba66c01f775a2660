import type { Handler } from '../../src/http/handler-types';
import { clearSessionCookie } from './views';
import { toStepUpProof } from './proof';

/** 204: the account and its personal data are gone; the session cookie is cleared, whichever transport was used. */
export const deleteMe: Handler<'deleteMe'> = async ({ app, services, caller, body, meta }) => {
  await services.stepUp.deleteAccount(caller.userId, toStepUpProof(body), meta);
  return { status: 204, body: undefined, headers: clearSessionCookie(app.config) };
};
