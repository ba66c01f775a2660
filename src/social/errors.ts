// The social sign-in domain's error codes, declared once (a test checks them against openapi.yaml).
// The browser callbacks never answer these as Problems: they redirect with `?error=<code>`.
import { defineErrors } from '../errors';

export const socialErrors = defineErrors('social', {
  invalidToken: { code: 'invalid_token', status: 401, detail: 'The ID token could not be verified.' },
  invalidSignature: { code: 'invalid_signature', status: 401, detail: 'The notification signature is not valid.' },
  accountExists: {
    code: 'account_exists',
    status: 409,
    detail: 'An account with this email already exists. Sign in another way, then link the provider.',
  },
  providerAlreadyLinked: { code: 'provider_already_linked', status: 409, detail: 'You have already linked an account from this provider.' },
  lastSignInMethod: { code: 'last_sign_in_method', status: 409, detail: 'This is your only way to sign in. Set a password or add a passkey first.' },
  invalidState: { code: 'invalid_state', status: 400, detail: 'This sign-in link has expired or was already used. Start again.' },
  redirectNotAllowed: { code: 'redirect_not_allowed', status: 422, detail: 'redirect_to is not on an allowed app origin.' },
  providerNotConfigured: { code: 'provider_not_configured', status: 404, detail: 'Sign-in with this provider is not configured on this service.' },
  providerUnavailable: { code: 'provider_unavailable', status: 503, detail: 'The provider could not be reached. Try again shortly.' },
});

const PROVIDER_RETRY_AFTER_SECONDS = 5;

/** 503 `provider_unavailable`: a passing outage, so the client is told when to try again. */
export const providerUnavailable = () => socialErrors.providerUnavailable(undefined, { headers: { 'Retry-After': String(PROVIDER_RETRY_AFTER_SECONDS) } });
