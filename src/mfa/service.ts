// Second factors at sign-in (DESIGN 2): every way of signing in ends its first factor (password,
// a social provider) in `signIn`, which answers a session, or, when the user has a
// second factor, a challenge: single use, 5 minutes, 5 tries, finished by a TOTP code, a recovery
// code or a passkey. Also the state of a user's factors and the recovery-code regeneration.
import { randomBytes } from 'node:crypto';
import { hashToken } from '../sessions/tokens';
import type { Services } from '../services';
import type { RequestMeta } from '../audit/service';
import type { IssuedSession, StepUpProof } from '../accounts/service';
import type { UserRow } from '../accounts/store';
import type { Transport } from '../sessions/service';
import type { Credential } from '../passkeys/service';
import { accountView, mfaSummary, type MfaSummary } from '../accounts/me';
import { accountErrors } from '../accounts/errors';
import { rateLimited } from '../errors';
import { ulid } from '../ids';
import { mfaErrors } from './errors';
import * as store from './store';

export const CHALLENGE_TTL_MS = 5 * 60 * 1000;
export const CHALLENGE_MAX_FAILURES = 5;

export type SecondFactor = 'totp' | 'passkey' | 'recovery_code';

export interface IssuedChallenge {
  token: string;
  methods: SecondFactor[];
  expiresAt: Date;
}

/** What a first factor leads to: a session (200), or a challenge for the second factor (202). */
export type SignInOutcome = ({ kind: 'session' } & IssuedSession) | { kind: 'challenge'; challenge: IssuedChallenge };

/** The second factor a challenge is finished with: exactly one. */
export type SecondFactorInput = { code: string } | { recoveryCode: string } | { passkey: { ceremonyToken: string; credential: Credential } };

function methodsOf(state: store.MfaState): SecondFactor[] {
  const methods: SecondFactor[] = [];
  if (state.totp) methods.push('totp');
  if (state.passkeys > 0) methods.push('passkey');
  if (state.recoveryCodesRemaining > 0) methods.push('recovery_code');
  return methods;
}

export class MfaService {
  constructor(
    private readonly s: Pick<Services, 'db' | 'now' | 'audit' | 'transaction' | 'sessions' | 'limits' | 'totp' | 'recoveryCodes' | 'passkeys' | 'accounts'>,
  ) {}

  /** The user's second factors, on this scope's handle. */
  async state(userId: string): Promise<MfaSummary> {
    return mfaSummary(await store.mfaState(this.s.db, userId));
  }

  /**
   * The end of every first factor. A disabled account: 403 `account_disabled`. Without a second
   * factor: a session, with `auth.login.succeeded`. With one: a challenge, with
   * `auth.login.mfa_required`, and no session. `identityId` (a social sign-in) is kept with the
   * session, so the provider can withdraw it. `alsoInTransaction` runs in the same transaction
   * (e.g. a password rehash).
   */
  async signIn(
    user: UserRow,
    input: { firstFactor: string; transport: Transport; identityId?: string; data?: Record<string, unknown> },
    meta: RequestMeta,
    alsoInTransaction?: (tx: Services) => Promise<void>,
  ): Promise<SignInOutcome> {
    if (user.disabled) throw accountErrors.accountDisabled();
    const state = await store.mfaState(this.s.db, user.id);
    const summary = mfaSummary(state);
    const actor = { kind: 'user' as const, id: user.id };
    return this.s.transaction(async (tx) => {
      await alsoInTransaction?.(tx);
      if (summary.enabled) {
        const token = `chl_${randomBytes(32).toString('base64url')}`;
        const id = `chl_${ulid()}`;
        const now = tx.now();
        const expiresAt = new Date(now.getTime() + CHALLENGE_TTL_MS);
        await store.insertChallenge(tx.db, { id, tokenHash: hashToken(token), userId: user.id, firstFactor: input.firstFactor, transport: input.transport, identityId: input.identityId ?? null, now, expiresAt });
        const methods = methodsOf(state);
        await tx.audit.record({ action: 'auth.login.mfa_required', actor, target: { kind: 'user', id: user.id }, data: { method: input.firstFactor, methods, ...input.data }, meta });
        return { kind: 'challenge', challenge: { token, methods, expiresAt } };
      }
      const session = await tx.sessions.start({ userId: user.id, transport: input.transport, ip: meta.ip, userAgent: meta.userAgent, identityId: input.identityId });
      await tx.audit.record({
        action: 'auth.login.succeeded',
        actor,
        target: { kind: 'session', id: session.id },
        data: { method: input.firstFactor, transport: input.transport, ...input.data },
        meta,
      });
      return { kind: 'session', user: accountView(user, summary), session, transport: input.transport };
    });
  }

  /**
   * POST /v1/auth/login/mfa. The challenge is locked for the attempt, so its 5 tries cannot be
   * raced. A wrong factor is counted (committed) before the 401, and the 5th ends the challenge
   * with 429; a right one ends it and creates the session, in one transaction with the use of
   * the factor (a spent recovery code or TOTP step, a used passkey ceremony) and the audit events.
   */
  async complete(input: { challengeToken: string; factor: SecondFactorInput; transport?: Transport }, meta: RequestMeta): Promise<IssuedSession> {
    const method: SecondFactor = 'code' in input.factor ? 'totp' : 'recoveryCode' in input.factor ? 'recovery_code' : 'passkey';
    const outcome = await this.s.transaction(async (tx) => {
      const challenge = await store.findLiveChallenge(tx.db, hashToken(input.challengeToken), tx.now(), CHALLENGE_MAX_FAILURES, { lock: true });
      if (!challenge) return { kind: 'invalid_challenge' as const };
      const userId = challenge.userId;
      const actor = { kind: 'user' as const, id: userId };
      const factor = input.factor;
      let failure: string | null = null;
      if ('code' in factor) {
        if (!(await tx.totp.useCode(userId, factor.code))) failure = 'invalid_code';
      } else if ('recoveryCode' in factor) {
        if (!(await tx.recoveryCodes.use(userId, factor.recoveryCode))) failure = 'invalid_code';
      } else {
        const checked = await tx.passkeys.verifyAssertion({
          ceremonyToken: factor.passkey.ceremonyToken,
          credential: factor.passkey.credential,
          purposes: ['mfa'],
          userId,
          mfaChallengeId: challenge.id,
          requireUserVerification: false,
        });
        if (!checked.ok) failure = checked.reason;
      }
      if (failure) {
        const failures = await store.countChallengeFailure(tx.db, challenge.id, CHALLENGE_MAX_FAILURES, tx.now());
        await tx.audit.record({
          action: 'auth.login.failed',
          actor,
          target: { kind: 'user', id: userId },
          data: { reason: 'invalid_code', method: challenge.firstFactor, mfa_method: method, detail: failure, failures },
          meta,
        });
        return { kind: 'wrong' as const, left: CHALLENGE_MAX_FAILURES - failures };
      }
      await store.endChallenge(tx.db, challenge.id, tx.now());
      const transport = input.transport ?? challenge.transport;
      const session = await tx.sessions.start({ userId, transport, ip: meta.ip, userAgent: meta.userAgent, identityId: challenge.identityId });
      const state = await store.mfaState(tx.db, userId);
      if (method === 'recovery_code') {
        await tx.audit.record({
          action: 'auth.mfa.recovery_code_used',
          actor,
          target: { kind: 'user', id: userId },
          data: { remaining: state.recoveryCodesRemaining },
          meta,
        });
      }
      await tx.audit.record({
        action: 'auth.login.succeeded',
        actor,
        target: { kind: 'session', id: session.id },
        data: { method: challenge.firstFactor, mfa_method: method, transport },
        meta,
      });
      const user = await tx.accounts.findUser(userId);
      return { kind: 'ok' as const, issued: { user: accountView(user!, mfaSummary(state)), session, transport } };
    });
    if (outcome.kind === 'invalid_challenge') throw mfaErrors.invalidChallenge();
    if (outcome.kind === 'wrong') {
      if (outcome.left <= 0) throw rateLimited(0, 'Too many wrong codes. Sign in again.');
      const what = method === 'passkey' ? 'The passkey could not be verified.' : 'The code is wrong.';
      throw accountErrors.invalidCode(`${what} ${outcome.left} ${outcome.left === 1 ? 'try' : 'tries'} left.`);
    }
    return outcome.issued;
  }

  /** POST /v1/auth/login/mfa/passkey: an `mfa` passkey ceremony for a live challenge (no try used). */
  async startPasskey(challengeToken: string) {
    const challenge = await store.findLiveChallenge(this.s.db, hashToken(challengeToken), this.s.now(), CHALLENGE_MAX_FAILURES);
    if (!challenge) throw mfaErrors.invalidChallenge();
    return this.s.passkeys.startSecondFactor(challenge.userId, challenge.id);
  }

  /**
   * POST /v1/auth/mfa/recovery-codes (spec 4.1): every attempt counts against 3 an hour; 409
   * `mfa_not_enabled` without a second factor; then a fresh proof (a TOTP code, or a passkey
   * from a `verification` or sign-in `mfa` ceremony); then a new set, with
   * `mfa.recovery_codes.regenerated`.
   */
  async regenerateRecoveryCodes(userId: string, proof: Pick<StepUpProof, 'code' | 'passkey'>, meta: RequestMeta): Promise<{ codes: string[]; createdAt: Date }> {
    await this.s.limits.hit({ limit: 'recovery_codes.user', subject: userId });
    if (!(await this.state(userId)).enabled) throw mfaErrors.mfaNotEnabled();
    const method = await this.s.accounts.verifyFreshProof({ userId, proof, operation: 'regenerateRecoveryCodes', passkeyPurposes: ['verification', 'mfa'] }, meta);
    return this.s.transaction(async (tx) => {
      const set = await tx.recoveryCodes.replace(userId);
      await tx.audit.record({ action: 'mfa.recovery_codes.regenerated', actor: { kind: 'user', id: userId }, target: { kind: 'user', id: userId }, data: { proof: method, count: set.codes.length }, meta });
      return set;
    });
  }

  /** Retention: sign-in challenges that expired before `before`. */
  pruneExpired(before: Date): Promise<number> {
    return store.deleteExpiredChallenges(this.s.db, before, 1_000);
  }
}
