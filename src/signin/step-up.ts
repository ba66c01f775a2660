// Fresh proofs for sensitive changes (spec 2.5), in one place: deleting the account, turning the
// authenticator app off, regenerating recovery codes and removing a passkey each check what the
// change itself refuses first (so no proof is spent on a 404 or 409), then the proof, then make
// the change in its domain. Handlers call these and never a proof check of their own.
import type { Scope } from '../platform/scope';
import type { AuditService, RequestMeta } from '../audit/service';
import type { Limits } from '../ratelimit/limits';
import type { AccountService, ProofMethod } from '../accounts/service';
import type { PasswordHasher } from '../accounts/passwords';
import type { MfaService } from '../mfa/service';
import type { TotpService } from '../mfa/totp';
import type { CeremonyPurpose, Credential, PasskeyService } from '../passkeys/service';
import { userActor } from '../audit/service';
import { accountErrors } from '../accounts/errors';

/** A fresh proof for a sensitive change (`StepUpProof` in the contract): exactly one of these. */
export interface StepUpProof {
  code?: string;
  passkey?: { ceremonyToken: string; credential: Credential };
  password?: string;
}

const proofMethod = (proof: StepUpProof): ProofMethod => (proof.password !== undefined ? 'password' : proof.code !== undefined ? 'code' : 'passkey');

type Deps = Scope<{
  audit: AuditService;
  limits: Limits;
  passwords: PasswordHasher;
  accounts: AccountService;
  mfa: MfaService;
  totp: TotpService;
  passkeys: PasskeyService;
}>;

export class StepUp {
  constructor(private readonly s: Deps) {}

  /** DELETE /v1/auth/me: the proof, then src/accounts `deleteAccount`. */
  async deleteAccount(userId: string, proof: StepUpProof, meta: RequestMeta): Promise<void> {
    const method = await this.verify({ userId, proof, operation: 'deleteMe' }, meta);
    await this.s.accounts.deleteAccount({ userId, proofMethod: method }, meta);
  }

  /** DELETE /v1/auth/mfa/totp: 409 `mfa_not_enabled` while it is off; then the proof (never a password: TOTP on is a second factor). */
  async disableTotp(userId: string, proof: StepUpProof, meta: RequestMeta): Promise<void> {
    await this.s.totp.assertEnabled(userId);
    const method = await this.verify({ userId, proof, operation: 'disableTotp' }, meta);
    await this.s.totp.disable(userId, method, meta);
  }

  /**
   * POST /v1/auth/mfa/recovery-codes: the limit and 409 first; then the proof (a TOTP code, or a
   * passkey from a `verification` or sign-in `mfa` ceremony); then the new set.
   */
  async regenerateRecoveryCodes(userId: string, proof: Pick<StepUpProof, 'code' | 'passkey'>, meta: RequestMeta): Promise<{ codes: string[]; createdAt: Date }> {
    await this.s.mfa.admitRegeneration(userId);
    const method = await this.verify({ userId, proof, operation: 'regenerateRecoveryCodes', passkeyPurposes: ['verification', 'mfa'] }, meta);
    return this.s.mfa.regenerateRecoveryCodes(userId, method, meta);
  }

  /** DELETE /v1/auth/passkeys/{id}: 404 for a passkey not the user's (before the proof is spent); then the proof; then the removal. */
  async removePasskey(userId: string, id: string, proof: StepUpProof, meta: RequestMeta): Promise<void> {
    await this.s.passkeys.assertOwn(userId, id);
    const method = await this.verify({ userId, proof, operation: 'deletePasskey' }, meta);
    await this.s.passkeys.remove(userId, id, method, meta);
  }

  /**
   * Checks a fresh proof. Every proof counts towards `step_up.user` first, so the 6th try in 15
   * minutes is refused (429) whether or not it is right; a right one resets the count. 401
   * `invalid_credentials` for a wrong password, 401 `invalid_code` for a TOTP code that is wrong
   * or used before, or a passkey response that does not verify (its ceremony must be the user's,
   * of purpose `verification`, or one of `passkeyPurposes`); 422 `second_factor_required` for a
   * password while a second factor is on. A wrong proof writes `auth.step_up.failed`. A code or
   * passkey is used up by this check.
   */
  private async verify(input: { userId: string; proof: StepUpProof; operation: string; passkeyPurposes?: CeremonyPurpose[] }, meta: RequestMeta): Promise<ProofMethod> {
    const { userId, proof } = input;
    const method = proofMethod(proof);
    const attempt = { limit: 'step_up.user' as const, subject: userId };
    await this.s.limits.hit(attempt);
    let ok = false;
    let reason: string | undefined;
    if (method === 'password') {
      if ((await this.s.mfa.state(userId)).enabled) {
        throw accountErrors.secondFactorRequired(undefined, {
          errors: [{ message: 'not accepted while a second factor is on; give code or passkey', location: 'body.password' }],
        });
      }
      const user = await this.s.accounts.findUser(userId);
      ok = await this.s.passwords.verify(proof.password!, user?.passwordHash ?? null);
    } else if (method === 'code') {
      ok = await this.s.totp.useCode(userId, proof.code!);
    } else {
      const checked = await this.s.passkeys.verifyAssertion({
        ceremonyToken: proof.passkey!.ceremonyToken,
        credential: proof.passkey!.credential,
        purposes: input.passkeyPurposes ?? ['verification'],
        userId,
        requireUserVerification: false,
      });
      ok = checked.ok;
      if (!checked.ok) reason = checked.reason;
    }
    if (ok) {
      await this.s.limits.reset(attempt);
      return method;
    }
    await this.s.audit.record({
      action: 'auth.step_up.failed',
      actor: userActor(userId),
      target: { kind: 'user', id: userId },
      data: { operation: input.operation, method, ...(reason ? { reason } : {}) },
      meta,
    });
    if (method === 'password') throw accountErrors.invalidCredentials('The password is wrong.');
    throw accountErrors.invalidCode(method === 'code' ? 'The code is wrong or has already been used.' : 'The passkey response is not valid.');
  }
}
