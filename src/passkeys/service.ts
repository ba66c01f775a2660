// Passkeys (WebAuthn, @simplewebauthn/server; DESIGN 2): registration, discoverable sign-in, and
// assertions used as a second factor or a step-up proof. Every ceremony is a single-use token
// (only its hash stored), valid 5 minutes, bound to its purpose and user (and, for a second
// factor, to the sign-in challenge). RP id and origins come from config.
import { randomBytes } from 'node:crypto';
import type { Scope } from '../platform/scope';
import type { AuditService } from '../audit/service';
import type { AccountService } from '../accounts/service';
import type { MfaService } from '../mfa/service';
import type { RecoveryCodes } from '../mfa/recovery-codes';
import { hashToken } from '../sessions/tokens';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { RequestMeta } from '../audit/service';
import type { ProofMethod } from '../accounts/service';
import { commonErrors } from '../errors';
import { newId } from '../ids';
import { pageById, type Page, type PageRequest } from '../pagination';
import { passkeyErrors } from './errors';
import * as store from './store';

export type { CeremonyPurpose, PasskeyRow } from './store';

const CEREMONY_TTL_MS = 5 * 60 * 1000;
const MAX_PASSKEYS = 20;
/** Preferred first: Ed25519, ES256, RS256 (what browsers and security keys offer). */
const ALGORITHMS = [-8, -7, -257];

export interface Ceremony<Options> {
  token: string;
  expiresAt: Date;
  options: Options;
}

/** A passkey response as the browser sends it (`PublicKeyCredential.toJSON()`). */
export type Credential = Record<string, unknown>;

/** Why an assertion was refused (kept in audit data; never shown to the caller, who gets one answer). */
type AssertionFailure = 'invalid_ceremony' | 'unknown_passkey' | 'other_user' | 'user_handle_mismatch' | 'assertion_failed' | 'counter_regressed';

export type AssertionOutcome = { ok: true; passkey: store.PasskeyRow } | { ok: false; reason: AssertionFailure };

/** Transports as reported, kept only when they look like transport names. */
function cleanTransports(raw: unknown): string[] {
  return Array.isArray(raw) ? raw.filter((t): t is string => typeof t === 'string' && /^[a-z-]{1,32}$/.test(t)).slice(0, 8) : [];
}

/** A name from what the authenticator says about itself, when the user gave none. */
function derivedName(deviceType: string, transports: string[]): string {
  if (deviceType === 'multiDevice') return 'Synced passkey';
  if (transports.some((t) => t === 'usb' || t === 'nfc' || t === 'ble')) return 'Security key';
  return 'Passkey';
}

type Deps = Scope<{ audit: AuditService; accounts: AccountService; mfa: MfaService; recoveryCodes: RecoveryCodes }>;

export class PasskeyService {
  constructor(private readonly s: Deps) {}

  private get rp() {
    return this.s.config.webauthn;
  }

  private async issueCeremony(c: Omit<store.CeremonyRow, 'name' | 'mfaChallengeId'> & Partial<Pick<store.CeremonyRow, 'name' | 'mfaChallengeId'>>) {
    const token = `cer_${randomBytes(32).toString('base64url')}`;
    const now = this.s.now();
    const expiresAt = new Date(now.getTime() + CEREMONY_TTL_MS);
    await store.insertCeremony(this.s.db, { name: null, mfaChallengeId: null, ...c, tokenHash: hashToken(token), now, expiresAt });
    return { token, expiresAt };
  }

  private async requestOptions(allow: store.PasskeyRow[], userVerification: 'required' | 'preferred'): Promise<PublicKeyCredentialRequestOptionsJSON> {
    return generateAuthenticationOptions({
      rpID: this.rp.rpId,
      timeout: CEREMONY_TTL_MS,
      userVerification,
      allowCredentials: allow.map((p) => ({ id: p.credentialId, transports: p.transports })),
    });
  }

  /** GET /v1/auth/passkeys: newest first, a page at a time. */
  list(userId: string, request: PageRequest): Promise<Page<store.PasskeyRow>> {
    return pageById('pky', request, (limit, beforeId) => store.listPasskeys(this.s.db, userId, limit, beforeId));
  }

  /**
   * POST /v1/auth/passkeys/registration: creation options (discoverable credential required,
   * the user's passkeys excluded, attestation `none`) and a `registration` ceremony for the user.
   */
  async startRegistration(user: { id: string; email: string; name: string | null }, name?: string): Promise<Ceremony<PublicKeyCredentialCreationOptionsJSON>> {
    const existing = await store.listPasskeys(this.s.db, user.id, MAX_PASSKEYS + 1);
    if (existing.length >= MAX_PASSKEYS) throw passkeyErrors.limitReached();
    const handle = await store.ensureUserHandle(this.s.db, user.id);
    const options = await generateRegistrationOptions({
      rpName: this.rp.rpName,
      rpID: this.rp.rpId,
      userID: new Uint8Array(handle),
      userName: user.email,
      userDisplayName: user.name ?? user.email,
      timeout: CEREMONY_TTL_MS,
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
      supportedAlgorithmIDs: ALGORITHMS,
      extensions: { credProps: true },
    });
    const ceremony = await this.issueCeremony({ purpose: 'registration', userId: user.id, challenge: options.challenge, name: name?.trim() ?? null });
    return { ...ceremony, options };
  }

  /**
   * POST /v1/auth/passkeys: verifies the attestation against the user's `registration` ceremony
   * (used up whatever the outcome) and stores the passkey with `passkey.added`. 422
   * `invalid_ceremony` / `passkey_verification_failed`; 409 when registered already or at 20.
   */
  async add(userId: string, input: { ceremonyToken: string; credential: Credential; name?: string }, meta: RequestMeta): Promise<store.PasskeyRow> {
    const ceremony = await store.consumeCeremony(this.s.db, hashToken(input.ceremonyToken), ['registration'], this.s.now());
    if (!ceremony || ceremony.userId !== userId) {
      throw passkeyErrors.invalidCeremony(undefined, { errors: [{ message: 'unknown, expired or used ceremony token', location: 'body.ceremony_token' }] });
    }
    let info;
    try {
      const verified = await verifyRegistrationResponse({
        response: input.credential as unknown as RegistrationResponseJSON,
        expectedChallenge: ceremony.challenge,
        expectedOrigin: this.rp.origins,
        expectedRPID: this.rp.rpId,
        requireUserVerification: false,
        supportedAlgorithmIDs: ALGORITHMS,
      });
      if (!verified.verified) throw new Error('the attestation does not verify');
      info = verified.registrationInfo;
    } catch (err) {
      const message = (err as Error).message.slice(0, 200);
      throw passkeyErrors.verificationFailed(undefined, { errors: [{ message, location: 'body.credential' }] });
    }
    const transports = cleanTransports(info.credential.transports);
    const name = input.name?.trim() || ceremony.name || derivedName(info.credentialDeviceType, transports);
    return this.s.transaction(async (tx) => {
      if (!(await store.lockOwner(tx.db, userId))) throw commonErrors.unauthenticated();
      if ((await store.countPasskeys(tx.db, userId)) >= MAX_PASSKEYS) throw passkeyErrors.limitReached();
      const passkey = await store.insertPasskey(tx.db, {
        id: newId('pky'),
        userId,
        credentialId: info.credential.id,
        publicKey: Buffer.from(info.credential.publicKey),
        signCount: info.credential.counter,
        transports,
        deviceType: info.credentialDeviceType,
        backedUp: info.credentialBackedUp,
        aaguid: info.aaguid,
        name,
        createdAt: tx.now(),
      });
      if (!passkey) throw passkeyErrors.alreadyRegistered();
      await tx.audit.record({
        action: 'passkey.added',
        actor: { kind: 'user', id: userId },
        target: { kind: 'passkey', id: passkey.id },
        data: { backed_up: passkey.backedUp, device_type: passkey.deviceType, transports },
        meta,
      });
      return passkey;
    });
  }

  /** POST /v1/auth/passkeys/login/options: a `login` ceremony for discoverable credentials (user verification required). */
  async startSignIn(): Promise<Ceremony<PublicKeyCredentialRequestOptionsJSON>> {
    const options = await this.requestOptions([], 'required');
    return { ...(await this.issueCeremony({ purpose: 'login', userId: null, challenge: options.challenge })), options };
  }

  /** POST /v1/auth/passkeys/verification: a `verification` ceremony over the user's passkeys; 409 `no_passkeys`. */
  async startVerification(userId: string): Promise<Ceremony<PublicKeyCredentialRequestOptionsJSON>> {
    const passkeys = await store.listPasskeys(this.s.db, userId, MAX_PASSKEYS);
    if (!passkeys.length) throw passkeyErrors.noPasskeys('You have no passkey. Use a code from your authenticator app instead.');
    const options = await this.requestOptions(passkeys, 'preferred');
    return { ...(await this.issueCeremony({ purpose: 'verification', userId, challenge: options.challenge })), options };
  }

  /**
   * An `mfa` ceremony for a sign-in challenge; it replaces the challenge's earlier one.
   * 409 `no_passkeys`.
   */
  async startSecondFactor(userId: string, mfaChallengeId: string): Promise<Ceremony<PublicKeyCredentialRequestOptionsJSON>> {
    const passkeys = await store.listPasskeys(this.s.db, userId, MAX_PASSKEYS);
    if (!passkeys.length) throw passkeyErrors.noPasskeys();
    const options = await this.requestOptions(passkeys, 'preferred');
    await store.endChallengeCeremonies(this.s.db, mfaChallengeId, this.s.now());
    return { ...(await this.issueCeremony({ purpose: 'mfa', userId, mfaChallengeId, challenge: options.challenge })), options };
  }

  /**
   * Checks a passkey assertion against its ceremony, which is used up whatever the outcome: the
   * ceremony must be live and of one of `purposes`, belong to `userId` (for sign-in: to the
   * passkey's owner, and the user handle must match) and to `mfaChallengeId` when given; the
   * passkey must be registered to that user; the signature, challenge, origin, RP id, user
   * presence (and verification when required) must verify, and the signature counter must move
   * forward. On success the counter, backup state and last use are stored.
   */
  async verifyAssertion(input: {
    ceremonyToken: string;
    credential: Credential;
    purposes: store.CeremonyPurpose[];
    userId: string | null;
    mfaChallengeId?: string;
    requireUserVerification: boolean;
  }): Promise<AssertionOutcome> {
    const ceremony = await store.consumeCeremony(this.s.db, hashToken(input.ceremonyToken), input.purposes, this.s.now());
    if (!ceremony || ceremony.userId !== input.userId || (input.mfaChallengeId !== undefined && ceremony.mfaChallengeId !== input.mfaChallengeId)) {
      return { ok: false, reason: 'invalid_ceremony' };
    }
    const response = input.credential as unknown as AuthenticationResponseJSON;
    if (typeof response.id !== 'string' || response.id !== response.rawId) return { ok: false, reason: 'assertion_failed' };
    const passkey = await store.findPasskeyByCredentialId(this.s.db, response.id);
    if (!passkey) return { ok: false, reason: 'unknown_passkey' };
    if (input.userId !== null && passkey.userId !== input.userId) return { ok: false, reason: 'other_user' };
    if (input.userId === null) {
      // A discoverable sign-in names its account only through the user handle: it must be the owner's.
      const handle = await store.userHandleOf(this.s.db, passkey.userId);
      if (!handle || response.response?.userHandle !== handle.toString('base64url')) return { ok: false, reason: 'user_handle_mismatch' };
    }
    let info;
    try {
      const verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: ceremony.challenge,
        expectedOrigin: this.rp.origins,
        expectedRPID: this.rp.rpId,
        credential: { id: passkey.credentialId, publicKey: new Uint8Array(passkey.publicKey), counter: passkey.signCount, transports: passkey.transports },
        requireUserVerification: input.requireUserVerification,
      });
      if (!verified.verified) return { ok: false, reason: 'assertion_failed' };
      info = verified.authenticationInfo;
    } catch (err) {
      return { ok: false, reason: /counter/i.test((err as Error).message) ? 'counter_regressed' : 'assertion_failed' };
    }
    const recorded = await store.recordPasskeyUse(this.s.db, passkey.id, {
      oldCount: passkey.signCount,
      newCount: info.newCounter,
      backedUp: info.credentialBackedUp,
      now: this.s.now(),
    });
    if (!recorded) return { ok: false, reason: 'counter_regressed' };
    return { ok: true, passkey };
  }

  /** Retention: ceremonies that expired before `before`. */
  pruneExpiredCeremonies(before: Date): Promise<number> {
    return store.deleteExpiredCeremonies(this.s.db, before, 1_000);
  }

  /** PATCH /v1/auth/passkeys/{id}: 404 for another user's passkey; `passkey.renamed`. */
  async rename(userId: string, id: string, name: string, meta: RequestMeta): Promise<store.PasskeyRow> {
    return this.s.transaction(async (tx) => {
      const passkey = await store.renamePasskey(tx.db, userId, id, name.trim());
      if (!passkey) throw commonErrors.notFound('No such passkey.');
      await tx.audit.record({ action: 'passkey.renamed', actor: { kind: 'user', id: userId }, target: { kind: 'passkey', id }, meta });
      return passkey;
    });
  }

  /** DELETE /v1/auth/passkeys/{id}, before the proof is spent: 404 for a passkey not the user's. */
  async assertOwn(userId: string, id: string): Promise<void> {
    if (!(await store.findOwnPasskey(this.s.db, userId, id))) throw commonErrors.notFound('No such passkey.');
  }

  /**
   * DELETE /v1/auth/passkeys/{id}, after a fresh proof (src/signin/step-up.ts), in one
   * transaction: 409 `last_sign_in_method` when it is the only way left to sign in; the passkey
   * deleted; with no second factor left, the recovery codes too; `passkey.removed`.
   */
  async remove(userId: string, id: string, method: ProofMethod, meta: RequestMeta): Promise<void> {
    await this.s.transaction(async (tx) => {
      const methods = await tx.accounts.lockSignInMethods(userId);
      if (!methods) throw commonErrors.unauthenticated();
      const state = await tx.mfa.state(userId);
      if (!methods.password && methods.identities === 0 && state.passkeys <= 1) throw passkeyErrors.lastSignInMethod();
      if (!(await store.deletePasskey(tx.db, userId, id))) throw commonErrors.notFound('No such passkey.');
      const secondFactorOff = state.passkeys - 1 === 0 && !state.totp;
      if (secondFactorOff) await tx.recoveryCodes.deleteAll(userId);
      await tx.audit.record({
        action: 'passkey.removed',
        actor: { kind: 'user', id: userId },
        target: { kind: 'passkey', id },
        data: { proof: method, second_factor_off: secondFactorOff },
        meta,
      });
    });
  }
}
