import type { Handler } from '../../src/http/handler-types';
import { toStepUpProof } from '../auth/proof';

/** 204 after a fresh proof. */
export const deletePasskey: Handler<'deletePasskey'> = async ({ services, caller, params, body, meta }) => {
  await services.stepUp.removePasskey(caller.userId, params.id, toStepUpProof(body), meta);
  return { status: 204, body: undefined };
};
