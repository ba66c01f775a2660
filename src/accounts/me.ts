// The account as its owner sees it: GET /v1/auth/me and the `user` of every sign-in reply.
import { shownSecondFactors, type MfaSummary } from '../sessions/second-factors';
import type { SessionUser } from '../sessions/service';
import type { UserRow } from './store';

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
    mfa: mfa ?? shownSecondFactors(user as SessionUser),
    createdAt: user.createdAt,
    updatedAt: user.updatedAt,
  };
}
