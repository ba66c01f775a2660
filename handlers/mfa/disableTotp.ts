import type { Handler } from '../../src/http/handler-types';
import { toStepUpProof } from '../auth/proof';

/** 204 after a fresh proof: the authenticator app is off. */
export const disableTotp: Handler<'disableTotp'> = async ({ services, caller, body, meta }) => {
  await services.stepUp.disableTotp(caller.userId, toStepUpProof(body), meta);
  return { status: 204, body: undefined };
};
