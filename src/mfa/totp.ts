// The authenticator app (TOTP, DESIGN 2): SHA-1, 6 digits, 30-second steps, ±1 step accepted.
// A secret is pending until a code proves it, encrypted at rest (secret-box.ts), and a code is
// accepted once: the newest step used is kept and only a later one passes (store.useTotpStep).
import { Secret, TOTP } from 'otpauth';
import type { Scope } from '../platform/scope';
import type { AuditService } from '../audit/service';
import type { RecoveryCodes } from './recovery-codes';
import type { MfaService } from './service';
import type { AccountService } from '../accounts/service';
import type { RequestMeta } from '../audit/service';
import type { ProofMethod } from '../accounts/service';
import { accountErrors } from '../accounts/errors';
import { mfaErrors } from './errors';
import { openSecret, sealSecret } from './secret-box';
import * as store from './store';

const PERIOD_SECONDS = 30;
const SETUP_TTL_MS = 15 * 60 * 1000;
/** Wrong codes a pending setup allows before it is discarded. */
const SETUP_MAX_FAILURES = 5;

export interface TotpSetup {
  secret: string;
  otpauthUrl: string;
  expiresAt: Date;
}

type Deps = Scope<{ audit: AuditService; recoveryCodes: RecoveryCodes; mfa: MfaService; accounts: AccountService }>;

export class TotpService {
  constructor(private readonly s: Deps) {}

  private totp(secret: Secret, label: string): TOTP {
    return new TOTP({ issuer: this.s.config.mfa.totpIssuer, label, algorithm: 'SHA1', digits: 6, period: PERIOD_SECONDS, secret });
  }

  /**
   * The 30-second step a code belongs to (now, or one step either side), or null. Comparison is
   * otpauth's, in constant time. Spaces in the code are ignored.
   */
  private matchingStep(secret: Secret, code: string): number | null {
    const token = code.replace(/\s+/g, '');
    if (!/^\d{6}$/.test(token)) return null;
    const now = this.s.now().getTime();
    const delta = this.totp(secret, '').validate({ token, timestamp: now, window: 1 });
    return delta === null ? null : Math.floor(now / 1000 / PERIOD_SECONDS) + delta;
  }

  private secretOf(userId: string, row: store.TotpRow): Secret {
    const bytes = openSecret(this.s.config.mfa.encryptionKey, userId, row.secretCiphertext);
    return new Secret({ buffer: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) });
  }

  /** POST /v1/auth/mfa/totp: a new pending secret (replacing a pending one); 409 while TOTP is on. */
  async startSetup(user: { id: string; email: string }): Promise<TotpSetup> {
    const secret = new Secret({ size: 20 });
    const now = this.s.now();
    const expiresAt = new Date(now.getTime() + SETUP_TTL_MS);
    const sealed = sealSecret(this.s.config.mfa.encryptionKey, user.id, Buffer.from(secret.bytes));
    if (!(await store.savePendingTotp(this.s.db, { userId: user.id, secretCiphertext: sealed, now, expiresAt }))) {
      throw mfaErrors.totpAlreadyEnabled();
    }
    return { secret: secret.base32, otpauthUrl: this.totp(secret, user.email).toString(), expiresAt };
  }

  /**
   * POST /v1/auth/mfa/totp/confirm: a right code turns TOTP on (its step counts as used) and
   * issues the first recovery codes, with `mfa.totp.enabled`, in one transaction. A wrong code is
   * counted (committed) before the 401; the 5th discards the setup.
   */
  async confirm(userId: string, code: string, meta: RequestMeta): Promise<{ codes: string[]; createdAt: Date }> {
    const outcome = await this.s.transaction(async (tx) => {
      const row = await store.findTotp(tx.db, userId, { lock: true });
      if (row?.enabled) throw mfaErrors.totpAlreadyEnabled();
      if (!row || row.pendingExpiresAt === null || row.pendingExpiresAt <= tx.now() || row.failedAttempts >= SETUP_MAX_FAILURES) {
        throw mfaErrors.totpSetupNotStarted();
      }
      const step = this.matchingStep(this.secretOf(userId, row), code);
      if (step === null) {
        const failures = await store.countPendingTotpFailure(tx.db, userId);
        return { ok: false as const, left: SETUP_MAX_FAILURES - failures };
      }
      await store.enableTotp(tx.db, userId, step, tx.now());
      const set = await tx.recoveryCodes.replace(userId);
      await tx.audit.record({ action: 'mfa.totp.enabled', actor: { kind: 'user', id: userId }, target: { kind: 'user', id: userId }, data: { recovery_codes_issued: set.codes.length }, meta });
      return { ok: true as const, set };
    });
    if (!outcome.ok) {
      throw accountErrors.invalidCode(outcome.left > 0 ? `The code is wrong. ${outcome.left} ${outcome.left === 1 ? 'try' : 'tries'} left.` : 'The code is wrong. Start the setup again.');
    }
    return outcome.set;
  }

  /**
   * Accepts a code of the user's TOTP (on) once: false when it is wrong, TOTP is off, or the
   * code's step (or a later one) was used before. Runs on this scope's handle, so inside a
   * transaction the use commits with the change it allows.
   */
  async useCode(userId: string, code: string): Promise<boolean> {
    const row = await store.findTotp(this.s.db, userId);
    if (!row?.enabled) return false;
    const step = this.matchingStep(this.secretOf(userId, row), code);
    return step !== null && (await store.useTotpStep(this.s.db, userId, step));
  }

  /** DELETE /v1/auth/mfa/totp, before the proof is spent: 409 `mfa_not_enabled` while it is off. */
  async assertEnabled(userId: string): Promise<void> {
    if (!(await store.findTotp(this.s.db, userId))?.enabled) throw mfaErrors.mfaNotEnabled('The authenticator app is not turned on.');
  }

  /**
   * DELETE /v1/auth/mfa/totp, after a fresh proof (src/signin/step-up.ts): deletes the secret; with no passkey left the
   * second factor is off, so the recovery codes go too. `mfa.totp.disabled`.
   */
  async disable(userId: string, proof: ProofMethod, meta: RequestMeta): Promise<void> {
    await this.s.transaction(async (tx) => {
      if (!(await store.deleteTotp(tx.db, userId))) throw mfaErrors.mfaNotEnabled('The authenticator app is not turned on.');
      const { passkeys } = await store.mfaState(tx.db, userId);
      if (passkeys === 0) await tx.recoveryCodes.deleteAll(userId);
      await tx.audit.record({
        action: 'mfa.totp.disabled',
        actor: { kind: 'user', id: userId },
        target: { kind: 'user', id: userId },
        data: { proof, second_factor_off: passkeys === 0 },
        meta,
      });
    });
  }
}
