import type { Handler } from '../../src/http/handler-types';
import { toStepUpProof } from '../auth/proof';
import { recoveryCodeSet } from './views';

/** 200 ten new recovery codes (spec 4.1); the old ones stop working. */
export const regenerateRecoveryCodes: Handler<'regenerateRecoveryCodes'> = async ({ services, caller, body, meta }) => ({
  status: 200,
  body: recoveryCodeSet(await services.stepUp.regenerateRecoveryCodes(caller.userId, toStepUpProof(body), meta)),
});
