// Social sign-in (DESIGN 2): the browser flow (start → provider → callback), native sign-in with
// an ID token and a nonce we issued, and the identities linked to an account. Every first factor
// ends in MfaService.signIn, so a second factor gives a challenge exactly as a password does.
//
// Browser flow secrets: the state goes to the provider and back; a second random value, the
// binding, lives only in a short-lived cookie of this browser. The stored state row holds hashes
// of both, and the PKCE verifier and the OpenID nonce are derived from the binding (HMAC), so a
// leaked state (in a log, a Referer) or database row cannot complete a sign-in in another browser.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SocialProviders } from './providers';
import type { OperatorGrants } from '../accounts/operators';
import type { Scope } from '../platform/scope';
import type { RuntimeSettings } from '../settings/runtime';
import type { AuditService } from '../audit/service';
import type { Limits } from '../ratelimit/limits';
import type { AccountService } from '../accounts/service';
import type { SessionService } from '../sessions/service';
import * as oidc from 'openid-client';
import type { RequestMeta } from '../audit/service';
import type { Caller, Transport } from '../sessions/service';
import type { SignInOutcome, SignInService } from '../signin/service';
import type { UserRow } from '../accounts/service';
import type { Provider } from '../config/social-providers';
import { AppError, commonErrors } from '../errors';
import { accountErrors } from '../accounts/errors';
import { socialErrors } from './errors';
import { TokenRejected, verifyIdToken, type IdentityClaims } from './id-token';
import * as store from './store';

export const STATE_TTL_MS = 10 * 60 * 1000;
const NONCE_TTL_MS = 10 * 60 * 1000;

export type Intent = 'login' | 'link';

/** Where the browser goes after the callback, and what happened. */
export type CallbackOutcome = { redirectTo: string } & (
  | { kind: 'signed_in'; outcome: SignInOutcome }
  | { kind: 'linked' }
  | { kind: 'error'; code: CallbackErrorCode }
);

/** The `?error=` codes of the callbacks' redirects (the contract lists them). */
type CallbackErrorCode =
  | 'access_denied'
  | 'provider_error'
  | 'invalid_token'
  | 'registration_closed'
  | 'account_exists'
  | 'account_disabled'
  | 'identity_in_use'
  | 'provider_already_linked'
  | 'provider_not_configured';

const CALLBACK_ERROR_CODES = new Set<string>([
  'invalid_token',
  'registration_closed',
  'account_exists',
  'account_disabled',
  'identity_in_use',
  'provider_already_linked',
  'provider_not_configured',
]);

/** What the provider's redirect (GET query or form_post body) carried. */
export interface CallbackParams {
  code?: string;
  state?: string;
  error?: string;
  error_description?: string;
  iss?: string;
  /** provider_b, first sign-in only: the user's name as the provider gave it to the browser. */
  name?: string | null;
}

/** Exchange failures that are the provider's (or our configuration's), not the sign-in's. */
const PROVIDER_FAULTS = new Set(['unreachable', 'client_refused']);

/**
 * openid-client's codes for a provider that gave no usable answer: its timeout and abort (it wraps
 * the fetch's DOMException in a ClientError), and an HTTP error without an OAuth error body (a
 * proxy's 502 page, a 503).
 */
const NO_ANSWER_CODES = new Set(['OAUTH_TIMEOUT', 'OAUTH_ABORT', 'OAUTH_RESPONSE_IS_NOT_CONFORM', 'OAUTH_RESPONSE_IS_NOT_JSON']);

/**
 * Why a code exchange failed: `code_refused` (the provider says the code is bad, expired or used),
 * `client_refused` (it refuses our client credentials or request: a configuration problem),
 * `unreachable` (no usable answer in time), or `invalid_response` (its answer failed openid-client's
 * checks: state, nonce, ID token claims).
 */
function exchangeFailure(err: unknown): string {
  if (err instanceof oidc.ResponseBodyError) return err.error === 'invalid_grant' ? 'code_refused' : 'client_refused';
  if (err instanceof oidc.ClientError && NO_ANSWER_CODES.has(err.code ?? '')) return 'unreachable';
  // A refused or reset connection: fetch's own TypeError, which openid-client passes on as it is.
  if (err instanceof TypeError && /fetch failed/i.test(err.message)) return 'unreachable';
  return 'invalid_response';
}

const sha256 = (value: string) => createHash('sha256').update(value).digest();
const random = () => randomBytes(32).toString('base64url');
const derive = (binding: string, purpose: string, state: string) => createHmac('sha256', binding).update(`${purpose}:${state}`).digest('base64url');

type Deps = Scope<{ socialProviders: SocialProviders; runtimeSettings: RuntimeSettings; audit: AuditService; limits: Limits; accounts: AccountService; signIn: SignInService; sessions: SessionService; operators: OperatorGrants }>;

export class SocialService {
  constructor(
    private readonly s: Deps,
  ) {}

  private get providers() {
    return this.s.socialProviders;
  }

  private redirectUri(provider: Provider): string {
    return `${this.s.config.publicBaseUrl}/v1/auth/${provider}/callback`;
  }

  /** POST /v1/auth/{provider}/nonce: single use, 10 minutes; stored hashed. */
  async createNonce(provider: Provider): Promise<{ nonce: string; expiresAt: Date }> {
    this.providers.settings(provider);
    const nonce = `n0nce_${random()}`;
    const now = this.s.now();
    const expiresAt = new Date(now.getTime() + NONCE_TTL_MS);
    await store.insertNonce(this.s.db, { nonceHash: sha256(nonce), provider, now, expiresAt });
    return { nonce, expiresAt };
  }

  /**
   * POST /v1/auth/{provider}/token: the nonce is used up first, whatever follows; then the ID
   * token is verified and the identity signs in (or signs up). 401 `invalid_token` for any flaw
   * of token or nonce, with `auth.login.failed` saying which.
   */
  async signInWithIdToken(
    provider: Provider,
    input: { idToken: string; nonce: string; transport: Transport; name?: string | null },
    meta: RequestMeta,
  ): Promise<SignInOutcome> {
    const settings = this.providers.settings(provider);
    await this.s.limits.hit({ limit: 'login.ip', subject: meta.ip ?? 'unknown' });
    let claims: IdentityClaims;
    try {
      if (!(await store.consumeNonce(this.s.db, sha256(input.nonce), provider, this.s.now()))) throw new TokenRejected('nonce_unknown');
      const client = await this.providers.client(provider);
      claims = await verifyIdToken(client, input.idToken, {
        audiences: settings.clientIds,
        nonce: input.nonce,
        nonceHashed: settings.nonceHashed,
        now: this.s.now(),
        skewSeconds: this.providers.clockSkewSeconds,
      });
    } catch (err) {
      if (!(err instanceof TokenRejected)) throw err;
      await this.loginFailed(provider, null, 'invalid_token', meta, err.reason);
      throw socialErrors.invalidToken();
    }
    return this.signInAs(provider, claims, { transport: input.transport, name: input.name ?? null }, meta);
  }

  /**
   * GET /v1/auth/{provider}/start: 422 `redirect_not_allowed` for a `redirect_to` off the app
   * origins; `link` needs a signed-in caller without an identity of this provider. Returns the
   * provider's authorization URL and the binding for the state cookie.
   */
  async start(provider: Provider, input: { redirectTo: string; intent: Intent; caller: Caller | null }): Promise<{ location: string; binding: string }> {
    const settings = this.providers.settings(provider);
    if (!this.allowedRedirect(input.redirectTo)) {
      throw socialErrors.redirectNotAllowed(undefined, { errors: [{ location: 'query.redirect_to', message: 'must be on one of the configured app origins' }] });
    }
    if (input.intent === 'link') {
      if (!input.caller) throw commonErrors.unauthenticated('Sign in first to link a provider.');
      if (await store.findUserIdentity(this.s.db, input.caller.userId, provider)) throw socialErrors.providerAlreadyLinked();
    }
    const client = await this.providers.client(provider);
    const state = `st_${random()}`;
    const binding = random();
    const now = this.s.now();
    await store.insertState(this.s.db, {
      stateHash: sha256(state),
      bindingHash: sha256(binding),
      provider,
      intent: input.intent,
      userId: input.intent === 'link' ? input.caller!.userId : null,
      redirectTo: input.redirectTo,
      now,
      expiresAt: new Date(now.getTime() + STATE_TTL_MS),
    });
    const url = oidc.buildAuthorizationUrl(client.oidc, {
      redirect_uri: this.redirectUri(provider),
      response_type: 'code',
      scope: settings.scope,
      state,
      nonce: derive(binding, 'nonce', state),
      code_challenge: await oidc.calculatePKCECodeChallenge(derive(binding, 'pkce', state)),
      code_challenge_method: 'S256',
      ...(provider === 'provider_b' ? { response_mode: 'form_post' } : {}),
    });
    return { location: url.href, binding };
  }

  private allowedRedirect(redirectTo: string): boolean {
    try {
      const url = new URL(redirectTo);
      return (url.protocol === 'https:' || url.protocol === 'http:') && this.s.config.appOrigins.includes(url.origin);
    } catch {
      return false;
    }
  }

  /**
   * The provider's return. 400 `invalid_state` when the state is missing, unknown, expired, used,
   * or not bound to this browser; past that, every outcome is a redirect to the app: signed in,
   * challenged, linked, or `?error=<code>`.
   */
  async callback(provider: Provider, params: CallbackParams, binding: string | undefined, meta: RequestMeta): Promise<CallbackOutcome> {
    if (!params.state) throw socialErrors.invalidState();
    const row = await store.consumeState(this.s.db, sha256(params.state), provider, this.s.now());
    if (!row || !binding || !timingSafeEqual(sha256(binding), row.bindingHash)) throw socialErrors.invalidState();
    const redirectTo = row.redirectTo;
    const fail = async (code: CallbackErrorCode, detail?: string): Promise<CallbackOutcome> => {
      await this.loginFailed(provider, row.userId, code, meta, detail);
      return { redirectTo, kind: 'error', code };
    };
    if (params.error) {
      this.s.logger.info('social sign-in refused by the provider', { provider, error: params.error, description: params.error_description });
      return fail(['access_denied', 'user_cancelled_authorize'].includes(params.error) ? 'access_denied' : 'provider_error', params.error);
    }
    try {
      const settings = this.providers.settings(provider);
      if (!params.code) return await fail('provider_error', 'no_code');
      if (params.iss !== undefined && params.iss !== settings.issuer) return await fail('provider_error', 'issuer_mismatch');
      const claims = await this.exchangeCode(provider, params, binding);
      if ('rejected' in claims) return await fail(PROVIDER_FAULTS.has(claims.rejected) ? 'provider_error' : 'invalid_token', claims.rejected);
      if (row.intent === 'link') {
        const refused = await this.link(row.userId!, provider, claims, meta);
        return refused ? await fail(refused, 'link') : { redirectTo, kind: 'linked' };
      }
      const outcome = await this.signInAs(provider, claims, { transport: 'cookie', name: params.name ?? null }, meta);
      return { redirectTo, kind: 'signed_in', outcome };
    } catch (err) {
      if (err instanceof AppError && err.code === 'provider_unavailable') return fail('provider_error', 'unreachable');
      // signInAs and link record their own refusals.
      if (err instanceof AppError && CALLBACK_ERROR_CODES.has(err.code)) return { redirectTo, kind: 'error', code: err.code as CallbackErrorCode };
      throw err;
    }
  }

  /** The code for tokens (PKCE, state and nonce checked by openid-client), then our own ID token checks. */
  private async exchangeCode(provider: Provider, params: CallbackParams, binding: string): Promise<IdentityClaims | { rejected: string }> {
    const client = await this.providers.client(provider);
    const state = params.state!;
    const nonce = derive(binding, 'nonce', state);
    const current = new URL(this.redirectUri(provider));
    current.searchParams.set('code', params.code!);
    current.searchParams.set('state', state);
    if (params.iss !== undefined) current.searchParams.set('iss', params.iss);
    let idToken: string | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(client.oidc, current, {
        pkceCodeVerifier: derive(binding, 'pkce', state),
        expectedState: state,
        expectedNonce: nonce,
        idTokenExpected: true,
      });
      idToken = tokens.id_token;
    } catch (err) {
      this.s.logger.warn('social code exchange failed', { provider, error: String(err), oauth_error: (err as { error?: string }).error });
      return { rejected: exchangeFailure(err) };
    }
    try {
      // We put the nonce in the authorization request ourselves: never hashed.
      return await verifyIdToken(client, idToken!, { audiences: [client.settings.clientIds[0]!], nonce, nonceHashed: false, now: this.s.now(), skewSeconds: this.providers.clockSkewSeconds });
    } catch (err) {
      if (err instanceof TokenRejected) return { rejected: err.reason };
      throw err;
    }
  }

  /**
   * Signs the identity in. A known identity: its account. An unknown one: linked to the account
   * with the same email only when the provider and the account both have that email verified
   * (else 409 `account_exists`); with no such account, a new one (403 `registration_closed`
   * while sign-up is off). One transaction with the identity, the session and the audit events.
   */
  private async signInAs(provider: Provider, claims: IdentityClaims, input: { transport: Transport; name: string | null }, meta: RequestMeta): Promise<SignInOutcome> {
    try {
      return await this.s.transaction(async (tx) => {
        const now = tx.now();
        let identity = await store.findIdentity(tx.db, provider, claims.subject);
        let user: UserRow | null;
        if (identity) {
          user = await tx.accounts.findUser(identity.userId);
          await store.touchIdentity(tx.db, identity.id, { email: claims.email, emailVerified: claims.emailVerified, now });
        } else {
          user = await tx.accounts.findUserByEmail(claims.email);
          let via: 'sign_up' | 'email_match' = 'email_match';
          if (user) {
            if (!(claims.emailVerified && user.emailVerified)) throw socialErrors.accountExists();
          } else {
            if (!tx.runtimeSettings.get('auth.registration_enabled')) throw accountErrors.registrationClosed();
            user = await tx.accounts.createSocialUser({ email: claims.email, name: claims.name ?? input.name, emailVerified: claims.emailVerified });
            // Taken meanwhile by a concurrent sign-up.
            if (!user) throw socialErrors.accountExists();
            via = 'sign_up';
            // A provider-verified address is a verified account: OPERATOR_EMAILS applies to it as to any other.
            if (user.emailVerified && (await tx.operators.grantIfListed(user.id))) user = { ...user, operator: true };
            await tx.audit.record({ action: 'auth.registered', actor: { kind: 'user', id: user.id }, target: { kind: 'user', id: user.id }, data: { method: provider }, meta });
          }
          // Null: the account already has an identity of this provider (another subject), or a
          // concurrent request linked this one.
          identity = await store.insertIdentity(tx.db, { userId: user.id, provider, subject: claims.subject, email: claims.email, emailVerified: claims.emailVerified, now });
          if (!identity) throw socialErrors.accountExists();
          await this.recordLinked(tx, user.id, identity, via, meta);
        }
        if (!user) throw socialErrors.accountExists(); // the identity's account was deleted meanwhile
        return tx.signIn.afterFirstFactor(user, { firstFactor: provider, transport: input.transport, identityId: identity.id, data: { identity_id: identity.id } }, meta);
      });
    } catch (err) {
      if (err instanceof AppError && err.status !== 503) await this.loginFailed(provider, null, err.code, meta);
      throw err;
    }
  }

  /**
   * `intent=link` at the callback: the identity becomes the user's (one per provider per user).
   * Null when linked (or already linked to this user), else why not.
   */
  private link(userId: string, provider: Provider, claims: IdentityClaims, meta: RequestMeta): Promise<'identity_in_use' | 'provider_already_linked' | null> {
    return this.s.transaction(async (tx) => {
      // Locked so a concurrent unlink or account deletion sees this link, or happens first.
      if (!(await tx.accounts.lockSignInMethods(userId))) return 'identity_in_use';
      const existing = await store.findIdentity(tx.db, provider, claims.subject);
      if (existing && existing.userId !== userId) return 'identity_in_use';
      if (existing) {
        await store.touchIdentity(tx.db, existing.id, { email: claims.email, emailVerified: claims.emailVerified, now: tx.now() });
        return null;
      }
      if (await store.findUserIdentity(tx.db, userId, provider)) return 'provider_already_linked';
      const identity = await store.insertIdentity(tx.db, { userId, provider, subject: claims.subject, email: claims.email, emailVerified: claims.emailVerified, now: tx.now() });
      if (!identity) return 'identity_in_use';
      await this.recordLinked(tx, userId, identity, 'link', meta);
      return null;
    });
  }

  private recordLinked(tx: Deps, userId: string, identity: store.IdentityRow, via: 'sign_up' | 'email_match' | 'link', meta: RequestMeta) {
    return tx.audit.record({
      action: 'social.identity.linked',
      actor: { kind: 'user', id: userId },
      target: { kind: 'identity', id: identity.id },
      data: { provider: identity.provider, via },
      meta,
    });
  }

  private loginFailed(provider: Provider, userId: string | null, reason: string, meta: RequestMeta, detail?: string) {
    return this.s.audit.record({
      action: 'auth.login.failed',
      actor: { kind: 'user', id: userId },
      target: userId ? { kind: 'user', id: userId } : null,
      data: { reason, method: provider, ...(detail ? { detail } : {}) },
      meta,
    });
  }

  /** Retention: states and nonces expired, and notification ids received, before `before`. */
  pruneExpired(before: Date): Promise<number> {
    return store.deleteExpired(this.s.db, before, 1_000);
  }
}

