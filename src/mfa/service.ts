// The state of a user's second factors, and the recovery codes' regeneration. Signing in with them
// is src/signin; the fresh proof regeneration asks for is src/signin/step-up.ts.
import type { Scope } from '../platform/scope';
import type { AuditService, RequestMeta } from '../audit/service';
import type { Limits } from '../ratelimit/limits';
import type { RecoveryCodes } from './recovery-codes';
import { userActor } from '../audit/service';
import { mfaSummary, type MfaSummary } from '../sessions/second-factors';
import type { ProofMethod } from '../accounts/service';
import { mfaErrors } from './errors';
import * as store from './store';

type Deps = Scope<{ audit: AuditService; limits: Limits; recoveryCodes: RecoveryCodes }>;

export class MfaService {
  constructor(private readonly s: Deps) {}

  /** The user's second factors, on this scope's handle. */
  async state(userId: string): Promise<MfaSummary> {
    return mfaSummary(await store.mfaState(this.s.db, userId));
  }

  /**
   * POST /v1/auth/mfa/recovery-codes (spec 4.1), before the proof: every attempt counts against 3
   * an hour; 409 `mfa_not_enabled` without a second factor.
   */
  async admitRegeneration(userId: string): Promise<void> {
    await this.s.limits.hit({ limit: 'recovery_codes.user', subject: userId });
    if (!(await this.state(userId)).enabled) throw mfaErrors.mfaNotEnabled();
  }

  /** After the proof: a new set, with `mfa.recovery_codes.regenerated`. */
  regenerateRecoveryCodes(userId: string, proof: ProofMethod, meta: RequestMeta): Promise<{ codes: string[]; createdAt: Date }> {
    return this.s.transaction(async (tx) => {
      const set = await tx.recoveryCodes.replace(userId);
      await tx.audit.record({ action: 'mfa.recovery_codes.regenerated', actor: userActor(userId), target: { kind: 'user', id: userId }, data: { proof, count: set.codes.length }, meta });
      return set;
    });
  }
}
