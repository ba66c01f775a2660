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

/**
 * The second factors read with the caller's session. Only the operations in
 * SHOWS_SECOND_FACTORS (src/http/security-requirements.ts) read them: elsewhere this throws, so
 * an operation that starts showing them fails its first test rather than answering without them.
 */
export function shownSecondFactors(user: { mfa?: MfaSummary }): MfaSummary {
  if (!user.mfa) throw new Error('the session was read without its second factors: add the operation to SHOWS_SECOND_FACTORS');
  return user.mfa;
}
