// What every signed-in request knows of the user's second factors (read with the session in one
// statement, sessions/store.ts) and the one rule for when sign-in asks for one.
export interface MfaSummary {
  /** Sign-in asks for a second factor (TOTP on, or any passkey). */
  enabled: boolean;
  totp: boolean;
  passkeys: number;
  recoveryCodesRemaining: number;
}

/** The one rule for "sign-in asks for a second factor": the authenticator app on, or any passkey. */
export function mfaSummary(factors: { totp: boolean; passkeys: number; recoveryCodesRemaining: number }): MfaSummary {
  return { enabled: factors.totp || factors.passkeys > 0, ...factors };
}
