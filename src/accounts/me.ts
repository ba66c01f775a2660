// The account as its owner sees it: GET /v1/auth/me and the `user` of every sign-in reply.
import type { SessionUser } from '../sessions/store';
import type { UserRow } from './store';

export interface MfaSummary {
  /** Sign-in asks for a second factor (TOTP on, or any passkey). */
  enabled: boolean;
  totp: boolean;
  passkeys: number;
  recoveryCodesRemaining: number;
}

export interface AccountView {
  id: string;
  email: string;
  name: string | null;
  emailVerified: boolean;
  operator: boolean;
  mfa: MfaSummary;
  createdAt: Date;
  updatedAt: Date;
}

/** The one rule for "sign-in asks for a second factor": the authenticator app on, or any passkey. */
export function mfaSummary(factors: { totp: boolean; passkeys: number; recoveryCodesRemaining: number }): MfaSummary {
  return { enabled: factors.totp || factors.passkeys > 0, ...factors };
}

/** A new account's (register): nothing yet. */
export const NO_SECOND_FACTOR: MfaSummary = Object.freeze({ enabled: false, totp: false, passkeys: 0, recoveryCodesRemaining: 0 });

/** The account; `mfa` is read with the session for a SessionUser, given by the caller for a UserRow. */
export function accountView(user: SessionUser): AccountView;
export function accountView(user: UserRow, mfa: MfaSummary): AccountView;
export function accountView(user: SessionUser | UserRow, mfa?: MfaSummary): AccountView {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    emailVerified: user.emailVerified,
    operator: user.operator,
    mfa: mfa ?? (user as SessionUser).mfa,
    createdAt: user.createdAt,
    updatedAt: user.updatedAt,
  };
}
