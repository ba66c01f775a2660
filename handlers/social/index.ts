// The social tag's operations: browser flow, native ID tokens, provider notifications, identities.
import type { HandlerMap } from '../../src/http/handler-types';
import { startSocialLogin } from './startSocialLogin';
import { providerACallback } from './providerACallback';
import { providerBCallback } from './providerBCallback';
import { createSocialNonce } from './createSocialNonce';
import { providerAToken } from './providerAToken';
import { providerBToken } from './providerBToken';
import { providerBNotifications } from './providerBNotifications';
import { listIdentities } from './listIdentities';
import { unlinkIdentity } from './unlinkIdentity';

export const socialHandlers: HandlerMap = {
  startSocialLogin,
  providerACallback,
  providerBCallback,
  createSocialNonce,
  providerAToken,
  providerBToken,
  providerBNotifications,
  listIdentities,
  unlinkIdentity,
};
