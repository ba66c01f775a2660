// The accounts domain's error codes, declared once (a test checks them against openapi.yaml).
import { defineErrors } from '../errors';

export const accountErrors = defineErrors('accounts', {
  invalidCredentials: { code: 'invalid_credentials', status: 401, detail: 'The email or password is wrong.' },
  invalidCode: { code: 'invalid_code', status: 401, detail: 'The code is wrong or has expired.' },
  accountDisabled: { code: 'account_disabled', status: 403, detail: 'This account is disabled. Contact the service operator.' },
  registrationClosed: { code: 'registration_closed', status: 403, detail: 'Registration is closed.' },
  emailTaken: { code: 'email_taken', status: 409, detail: 'An account with this email already exists.' },
  alreadyVerified: { code: 'already_verified', status: 409, detail: 'Your email address is already verified.' },
  passwordNotSet: { code: 'password_not_set', status: 409, detail: 'This account has no password. Set one with a password reset code.' },
  passwordTooCommon: { code: 'password_too_common', status: 422, detail: 'This password is too common. Choose another one.' },
  secondFactorRequired: { code: 'second_factor_required', status: 422, detail: 'Confirm with your authenticator app or a passkey.' },
});
