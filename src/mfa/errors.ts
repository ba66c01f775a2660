// The second-factor domain's error codes, declared once (a test checks them against openapi.yaml).
import { defineErrors } from '../errors';

export const mfaErrors = defineErrors('mfa', {
  invalidChallenge: { code: 'invalid_challenge', status: 401, detail: 'This sign-in has expired. Sign in again.' },
  totpAlreadyEnabled: { code: 'totp_already_enabled', status: 409, detail: 'The authenticator app is already turned on.' },
  totpSetupNotStarted: { code: 'totp_setup_not_started', status: 409, detail: 'There is no pending authenticator-app setup. Start again.' },
  mfaNotEnabled: { code: 'mfa_not_enabled', status: 409, detail: 'Turn on a second factor first.' },
});
