// The mfa tag's operations (the authenticator app and recovery codes).
import type { HandlerMap } from '../../src/http/handler-types';
import { startTotpSetup } from './startTotpSetup';
import { confirmTotp } from './confirmTotp';
import { disableTotp } from './disableTotp';
import { regenerateRecoveryCodes } from './regenerateRecoveryCodes';

export const mfaHandlers: HandlerMap = {
  startTotpSetup,
  confirmTotp,
  disableTotp,
  regenerateRecoveryCodes,
};
