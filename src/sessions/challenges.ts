// Sign-in challenges (DESIGN 2): a sign-in whose first factor passed and whose user has a second
// factor waits here — single use, 5 minutes, 5 tries — until src/signin finishes it with a TOTP
// code, a recovery code or a passkey. A session in waiting, so the sessions domain keeps them: a
// disabled account's challenges end with its sessions.
import { randomBytes } from 'node:crypto';
import type { Scope } from '../platform/scope';
import { ulid } from '../ids';
import { hashToken } from './tokens';
import type { Transport } from './service';
import * as store from './challenges-store';

const CHALLENGE_TTL_MS = 5 * 60 * 1000;
export const CHALLENGE_MAX_FAILURES = 5;

export class SignInChallenges {
  constructor(private readonly s: Scope) {}

  /** A new challenge for the user; its token (given to the client once) and when it ends. */
  async open(input: { userId: string; firstFactor: string; transport: Transport; identityId: string | null }): Promise<{ token: string; expiresAt: Date }> {
    const token = `chl_${randomBytes(32).toString('base64url')}`;
    const now = this.s.now();
    const expiresAt = new Date(now.getTime() + CHALLENGE_TTL_MS);
    await store.insertChallenge(this.s.db, { id: `chl_${ulid()}`, tokenHash: hashToken(token), ...input, now, expiresAt });
    return { token, expiresAt };
  }

  /** The live challenge of a token (not ended, not expired, tries left); locked for the transaction when asked. */
  findLive(token: string, opts: { lock?: boolean } = {}): Promise<store.ChallengeRow | null> {
    return store.findLiveChallenge(this.s.db, hashToken(token), this.s.now(), CHALLENGE_MAX_FAILURES, opts);
  }

  /** Counts a wrong factor; the challenge ends with the 5th. The failures so far. */
  countFailure(id: string): Promise<number> {
    return store.countChallengeFailure(this.s.db, id, CHALLENGE_MAX_FAILURES, this.s.now());
  }

  end(id: string): Promise<void> {
    return store.endChallenge(this.s.db, id, this.s.now());
  }

  /** Ends every open challenge of the user (the account was disabled); how many. */
  endAllOf(userId: string): Promise<number> {
    return store.endUserChallenges(this.s.db, userId, this.s.now());
  }

  /** Retention: challenges that expired before `before`. */
  pruneExpired(before: Date): Promise<number> {
    return store.deleteExpiredChallenges(this.s.db, before, 1_000);
  }
}
