import type { Handler } from '../types';
import { clearSessionCookie } from './session-reply';
import { toStepUpProof } from './proof';

/** 204: the account and its personal data are gone; the session cookie is cleared, whichever transport was used. */
export const deleteMe: Handler<'deleteMe'> = async ({ app, services, caller, body, meta }) => {
  const proofMethod = await services.accounts.verifyFreshProof({ userId: caller.userId, proof: toStepUpProof(body), operation: 'deleteMe' }, meta);
  await services.accounts.deleteAccount({ userId: caller.userId, proofMethod }, meta);
  return { status: 204, body: undefined, headers: clearSessionCookie(app.config) };
};
