// The passkeys domain's error codes, declared once (a test checks them against openapi.yaml).
import { defineErrors } from '../errors';

export const passkeyErrors = defineErrors('passkeys', {
  noPasskeys: { code: 'no_passkeys', status: 409, detail: 'This account has no passkey. Use your authenticator app or a recovery code.' },
  alreadyRegistered: { code: 'passkey_already_registered', status: 409, detail: 'This passkey is already registered.' },
  limitReached: { code: 'passkey_limit_reached', status: 409, detail: 'You already have 20 passkeys. Remove one first.' },
  lastSignInMethod: { code: 'last_sign_in_method', status: 409, detail: 'This passkey is your only way to sign in. Add another one first.' },
  invalidCeremony: { code: 'invalid_ceremony', status: 422, detail: 'The registration has expired or was already used. Start again.' },
  verificationFailed: { code: 'passkey_verification_failed', status: 422, detail: 'The passkey could not be verified.' },
});
