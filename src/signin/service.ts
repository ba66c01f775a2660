// Signing in, in one place (DESIGN 2). Every way in — password (and registration), passkey, both
// social providers (src/social calls `afterFirstFactor`) and the second factor of a challenge —
// ends in `startSession`: the session row and `auth.login.succeeded` in one statement, in the
// transaction of the factor's use when there is one. A first factor for a user with a second
// factor ends in a challenge instead (src/sessions/challenges.ts). The HTTP edge turns an
// IssuedSession into the cookie or the token (handlers/auth/views.ts). Rate limits and bcrypt run
// before a transaction opens.
import type { Scope } from '../platform/scope';
import type { AuditService, RequestMeta } from '../audit/service';
import type { Limits } from '../ratelimit/limits';
import type { NewSession, SessionService, Transport } from '../sessions/service';
import type { SignInChallenges } from '../sessions/challenges';
import { CHALLENGE_MAX_FAILURES } from '../sessions/challenges';
import type { AccountService, UserRow } from '../accounts/service';
import { accountView, NO_SECOND_FACTOR, type AccountView } from '../accounts/me';
import { accountErrors } from '../accounts/errors';
import { userActor } from '../audit/service';
import type { MfaService } from '../mfa/service';
import type { MfaSummary } from '../sessions/second-factors';
import type { TotpService } from '../mfa/totp';
import type { RecoveryCodes } from '../mfa/recovery-codes';
import type { Credential, PasskeyService } from '../passkeys/service';
import { mfaErrors } from '../mfa/errors';
import { rateLimited } from '../errors';

/** A completed sign-in: what the HTTP edge turns into the LoginSuccess body (and the cookie). */
export interface IssuedSession {
  user: AccountView;
  session: NewSession;
  transport: Transport;
}

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

function methodsOf(state: MfaSummary): SecondFactor[] {
  const methods: SecondFactor[] = [];
  if (state.totp) methods.push('totp');
  if (state.passkeys > 0) methods.push('passkey');
  if (state.recoveryCodesRemaining > 0) methods.push('recovery_code');
  return methods;
}

type Deps = Scope<{
  audit: AuditService;
  limits: Limits;
  sessions: SessionService;
  challenges: SignInChallenges;
  accounts: AccountService;
  mfa: MfaService;
  totp: TotpService;
  recoveryCodes: RecoveryCodes;
  passkeys: PasskeyService;
}>;

export class SignInService {
  constructor(private readonly s: Deps) {}

  /**
   * POST /v1/auth/register: the account (src/accounts `prepareRegistration`, `create`: email
   * unverified, a verification code mailed, `auth.registered`) and its first session, in one
   * transaction. 429 over the per-IP limit; 403 while registration is closed; 409 `email_taken`.
   */
  async register(input: { email: string; password: string; name?: string | null; transport?: Transport }, meta: RequestMeta): Promise<IssuedSession> {
    const prepared = await this.s.accounts.prepareRegistration(input, meta);
    const transport = input.transport ?? 'cookie';
    return this.s.transaction(async (tx) => {
      const user = await tx.accounts.create(prepared, meta);
      const session = await this.startSession(tx, user.id, { method: 'password', transport, via: 'register' }, meta);
      return { user: accountView(user, NO_SECOND_FACTOR), session, transport };
    });
  }

  /**
   * POST /v1/auth/login with email and password (src/accounts `checkPassword`: one bcrypt compare
   * whatever the outcome, the same 401 for every failure). A hash made with another cost than the
   * configured one is replaced in the sign-in's transaction.
   */
  async withPassword(input: { email: string; password: string; transport?: Transport }, meta: RequestMeta): Promise<SignInOutcome> {
    const { user, secondFactors, newHash } = await this.s.accounts.checkPassword(input.email, input.password, meta);
    const rehash = newHash ? (tx: Deps) => tx.accounts.replacePasswordHash(user, newHash) : undefined;
    return this.afterFirstFactor(user, { firstFactor: 'password', transport: input.transport ?? 'cookie', secondFactors }, meta, rehash);
  }

  /**
   * The end of every first factor. A disabled account: 403 `account_disabled`. Without a second
   * factor: a session, with `auth.login.succeeded`. With one: a challenge, with
   * `auth.login.mfa_required`, and no session. `identityId` (a social sign-in) is kept with the
   * session, so the provider can withdraw it. `alsoInTransaction` runs in the same transaction
   * (e.g. a password rehash).
   */
  async afterFirstFactor(
    user: UserRow,
    input: { firstFactor: string; transport: Transport; identityId?: string; data?: Record<string, unknown>; secondFactors?: MfaSummary },
    meta: RequestMeta,
    alsoInTransaction?: (tx: Deps) => Promise<void>,
  ): Promise<SignInOutcome> {
    if (user.disabled) throw accountErrors.accountDisabled();
    const state = input.secondFactors ?? (await this.s.mfa.state(user.id));
    const withSession = async (tx: Deps): Promise<SignInOutcome> => {
      const session = await this.startSession(tx, user.id, { method: input.firstFactor, transport: input.transport, identityId: input.identityId, data: input.data }, meta);
      return { kind: 'session', user: accountView(user, state), session, transport: input.transport };
    };
    // The usual sign-in writes one statement (the session with its event): no transaction.
    if (!state.enabled && !alsoInTransaction) return withSession(this.s);
    return this.s.transaction(async (tx) => {
      await alsoInTransaction?.(tx);
      if (!state.enabled) return withSession(tx);
      const { token, expiresAt } = await tx.challenges.open({ userId: user.id, firstFactor: input.firstFactor, transport: input.transport, identityId: input.identityId ?? null });
      const methods = methodsOf(state);
      await tx.audit.record({ action: 'auth.login.mfa_required', actor: userActor(user.id), target: { kind: 'user', id: user.id }, data: { method: input.firstFactor, methods, ...input.data }, meta });
      return { kind: 'challenge', challenge: { token, methods, expiresAt } };
    });
  }

  /**
   * POST /v1/auth/login/mfa. The challenge is locked for the attempt, so its 5 tries cannot be
   * raced. A wrong factor is counted (committed) before the 401, and the 5th ends the challenge
   * with 429; a right one ends it and creates the session, in one transaction with the use of
   * the factor (a spent recovery code or TOTP step, a used passkey ceremony) and the audit events.
   */
  async completeChallenge(input: { challengeToken: string; factor: SecondFactorInput; transport?: Transport }, meta: RequestMeta): Promise<IssuedSession> {
    const method: SecondFactor = 'code' in input.factor ? 'totp' : 'recoveryCode' in input.factor ? 'recovery_code' : 'passkey';
    const outcome = await this.s.transaction(async (tx) => {
      const challenge = await tx.challenges.findLive(input.challengeToken, { lock: true });
      if (!challenge) return { kind: 'invalid_challenge' as const };
      const userId = challenge.userId;
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
        const failures = await tx.challenges.countFailure(challenge.id);
        await tx.audit.record({
          action: 'auth.login.failed',
          actor: userActor(userId),
          target: { kind: 'user', id: userId },
          data: { reason: 'invalid_code', method: challenge.firstFactor, mfa_method: method, detail: failure, failures },
          meta,
        });
        return { kind: 'wrong' as const, left: CHALLENGE_MAX_FAILURES - failures };
      }
      await tx.challenges.end(challenge.id);
      const transport = input.transport ?? challenge.transport;
      const state = await tx.mfa.state(userId);
      if (method === 'recovery_code') {
        await tx.audit.record({ action: 'auth.mfa.recovery_code_used', actor: userActor(userId), target: { kind: 'user', id: userId }, data: { remaining: state.recoveryCodesRemaining }, meta });
      }
      const session = await this.startSession(tx, userId, { method: challenge.firstFactor, mfaMethod: method, transport, identityId: challenge.identityId }, meta);
      const user = await tx.accounts.findUser(userId);
      return { kind: 'ok' as const, issued: { user: accountView(user!, state), session, transport } };
    });
    if (outcome.kind === 'invalid_challenge') throw mfaErrors.invalidChallenge();
    if (outcome.kind === 'wrong') {
      if (outcome.left <= 0) throw rateLimited('mfa_challenge', 0, 'Too many wrong codes. Sign in again.');
      const what = method === 'passkey' ? 'The passkey could not be verified.' : 'The code is wrong.';
      throw accountErrors.invalidCode(`${what} ${outcome.left} ${outcome.left === 1 ? 'try' : 'tries'} left.`);
    }
    return outcome.issued;
  }

  /** POST /v1/auth/login/mfa/passkey: an `mfa` passkey ceremony for a live challenge (no try used). */
  async startPasskeyFactor(challengeToken: string) {
    const challenge = await this.s.challenges.findLive(challengeToken);
    if (!challenge) throw mfaErrors.invalidChallenge();
    return this.s.passkeys.startSecondFactor(challenge.userId, challenge.id);
  }

  /**
   * POST /v1/auth/passkeys/login: a discoverable assertion with user verification against a
   * `login` ceremony; it satisfies both factors, so a session follows at once. Counts against the
   * per-IP sign-in limit. Every failure is the same 401 `invalid_credentials` (nothing is learned
   * about which passkeys exist); its reason goes to the `auth.login.failed` event.
   */
  async withPasskey(input: { ceremonyToken: string; credential: Credential; transport: Transport }, meta: RequestMeta): Promise<IssuedSession> {
    await this.s.limits.hit({ limit: 'login.ip', subject: meta.ip ?? 'unknown' });
    const checked = await this.s.passkeys.verifyAssertion({ ceremonyToken: input.ceremonyToken, credential: input.credential, purposes: ['login'], userId: null, requireUserVerification: true });
    if (!checked.ok) {
      await this.s.audit.record({ action: 'auth.login.failed', actor: userActor(null), target: null, data: { reason: 'invalid_credentials', method: 'passkey', detail: checked.reason }, meta });
      throw accountErrors.invalidCredentials('The passkey could not be verified. Start again.');
    }
    const userId = checked.passkey.userId;
    return this.s.transaction(async (tx) => {
      const user = await tx.accounts.findUser(userId);
      if (!user) throw accountErrors.invalidCredentials('The passkey could not be verified. Start again.');
      if (user.disabled) throw accountErrors.accountDisabled();
      const session = await this.startSession(tx, userId, { method: 'passkey', passkeyId: checked.passkey.id, transport: input.transport }, meta);
      return { user: accountView(user, await tx.mfa.state(userId)), session, transport: input.transport };
    });
  }

  /** The one place a session begins: its row and `auth.login.succeeded`, in one statement (in the caller's transaction, if any). */
  private startSession(
    tx: Deps,
    userId: string,
    how: { method: string; transport: Transport; mfaMethod?: SecondFactor; passkeyId?: string; via?: 'register'; identityId?: string | null; data?: Record<string, unknown> },
    meta: RequestMeta,
  ): Promise<NewSession> {
    return tx.sessions.start({ userId, transport: how.transport, ip: meta.ip, userAgent: meta.userAgent, identityId: how.identityId }, (session) => ({
      action: 'auth.login.succeeded',
      actor: userActor(userId),
      target: { kind: 'session', id: session.id },
      data: {
        method: how.method,
        ...(how.mfaMethod ? { mfa_method: how.mfaMethod } : {}),
        ...(how.passkeyId ? { passkey_id: how.passkeyId } : {}),
        transport: how.transport,
        ...(how.via ? { via: how.via } : {}),
        ...how.data,
      },
      meta,
    }));
  }
}
