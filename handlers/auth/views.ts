// The one place that turns a completed sign-in into its HTTP answer: the LoginSuccess body, and
// for `cookie` transport the session cookie (for `bearer`, `token` in the body and no cookie).
// Also the cookie-clearing header of sign-out, and the API shape of a user.
import type { components } from '../../codegen/api-types';
import type { Config } from '../../src/config';
import type { AccountView } from '../../src/accounts/me';
import type { IssuedChallenge, IssuedSession } from '../../src/signin/service';
import { secondsUntil, sessionCookie } from '../../src/http/session-cookie';
import { isoString } from '../../src/platform/timestamps';

type ApiUser = components['schemas']['User'];
type LoginSuccess = components['schemas']['LoginSuccess'];
type MfaChallenge = components['schemas']['MfaChallenge'];

export function toApiUser(user: AccountView): ApiUser {
  return {
    id: user.id,
    email: user.email,
    email_verified: user.emailVerified,
    name: user.name,
    operator: user.operator,
    mfa: {
      enabled: user.mfa.enabled,
      totp: user.mfa.totp,
      passkeys: user.mfa.passkeys,
      recovery_codes_remaining: user.mfa.recoveryCodesRemaining,
    },
    created_at: isoString(user.createdAt),
    updated_at: isoString(user.updatedAt),
  };
}

/** Headers that clear the session cookie (`Max-Age=0`), whichever transport the request used. */
export function clearSessionCookie(config: Config): Record<string, string> {
  return { 'Set-Cookie': sessionCookie(config, '', 0) };
}

/**
 * Body and headers of a completed sign-in. `expires_at` and the cookie's Max-Age are when the
 * session ends if it is not used (its idle expiry, or its absolute one when that comes first);
 * the router sets the cookie again each time use moves that moment (src/http/session-cookie.ts).
 */
export function sessionReply(config: Config, issued: IssuedSession, now: Date): { body: LoginSuccess; headers: Record<string, string> } {
  const body: LoginSuccess = {
    mfa_required: false,
    user: toApiUser(issued.user),
    session: { id: issued.session.id, expires_at: issued.session.expiresAt.toISOString() },
  };
  if (issued.transport === 'bearer') return { body: { ...body, token: issued.session.token }, headers: {} };
  return { body, headers: { 'Set-Cookie': sessionCookie(config, issued.session.token, secondsUntil(issued.session.expiresAt, now)) } };
}

/** The 202 body of a sign-in that waits for a second factor (no session, no cookie). */
export function challengeReply(challenge: IssuedChallenge): MfaChallenge {
  return { mfa_required: true, challenge_token: challenge.token, methods: challenge.methods, expires_at: challenge.expiresAt.toISOString() };
}
