// What every signed-in request knows of the user's second factors (read with the session in one
// statement, sessions/store.ts; with the user in a password sign-in, accounts/store.ts) and the
// one rule for when sign-in asks for one.
export interface MfaSummary {
  /** Sign-in asks for a second factor (TOTP on, or any passkey). */
  enabled: boolean;
  totp: boolean;
  passkeys: number;
  recoveryCodesRemaining: number;
}

/**
 * The columns that read the second factors of the user aliased `u`, in the statement that reads
 * that user (no round trip of their own); `secondFactorsOf` maps them.
 */
export const SECOND_FACTOR_COLUMNS = `exists (select 1 from totp_credentials t where t.user_id = u.id and t.enabled_at is not null) as mfa_totp,
            (select count(*) from passkeys p where p.user_id = u.id)::int as mfa_passkeys,
            (select count(*) from recovery_codes r where r.user_id = u.id and r.used_at is null)::int as mfa_recovery_codes`;

/** A row's SECOND_FACTOR_COLUMNS. */
export type SecondFactorColumns = { mfa_totp: boolean; mfa_passkeys: number; mfa_recovery_codes: number };

export function secondFactorsOf(row: SecondFactorColumns): MfaSummary {
  return mfaSummary({ totp: row.mfa_totp, passkeys: row.mfa_passkeys, recoveryCodesRemaining: row.mfa_recovery_codes });
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
