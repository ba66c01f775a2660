// One-time 6-digit codes (email verification, password reset; DESIGN 2): 15 minutes, 5 wrong tries
// and the code is dead, a new code kills the old one, stored only as an HMAC (a key of its own,
// derived from SESSION_SECRET) and compared in constant time. On top, a daily cap per account on wrong codes (DESIGN 6, `code_failures.account`):
// without it 3 codes per 15 minutes × 5 tries allowed ~1,400 guesses a day.
import { randomInt } from 'node:crypto';
import type { Scope } from '../platform/scope';
import type { Limits } from '../ratelimit/limits';
import type { AuditService } from '../audit/service';
import type { RequestMeta } from '../audit/service';
import { rateLimited } from '../errors';
import * as store from './codes-store';

export const CODE_TTL_MS = 15 * 60 * 1000;
const CODE_MAX_FAILURES = 5;

type Deps = Scope<{ limits: Limits; audit: AuditService }>;

export class OneTimeCodes {
  constructor(private readonly s: Deps) {}

  /** A new code for the user (earlier unused ones of the purpose die); the plain code is only mailed. */
  async issue(userId: string, purpose: store.CodePurpose): Promise<{ code: string; expiresAt: Date }> {
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const now = this.s.now();
    const expiresAt = new Date(now.getTime() + CODE_TTL_MS);
    await store.replaceCode(this.s.db, { userId, purpose, codeHash: this.s.config.keys.oneTimeCodes.sign(`${purpose}:${userId}:${code}`), now, expiresAt });
    return { code, expiresAt };
  }

  /**
   * Counts an attempt against the account's daily cap before the code is checked (outside the
   * transaction: Redis). Past the cap: 429 until the window passes; the first refused attempt
   * writes `auth.code.attempts_capped`. Call `settle` once the outcome is known.
   */
  async beginAttempt(account: { email: string; userId: string | null }, purpose: store.CodePurpose, meta: RequestMeta): Promise<void> {
    const [state] = await this.s.limits.count([{ limit: 'code_failures.account', subject: account.email }]);
    if (!state!.spent) return;
    if (state!.count === this.s.limits.budget('code_failures.account').max + 1 && account.userId) {
      await this.s.audit.record({
        action: 'auth.code.attempts_capped',
        actor: { kind: 'user', id: null },
        target: { kind: 'user', id: account.userId },
        data: { purpose, max_failures_per_day: this.s.limits.budget('code_failures.account').max },
        meta,
      });
    }
    throw rateLimited('code_failures.account', state!.retryAfterSeconds, `Too many wrong codes for this account. Try again in ${state!.retryAfterSeconds} seconds.`);
  }

  /** A right code does not count against the cap: its attempt is given back. */
  async settle(account: { email: string }, right: boolean): Promise<void> {
    if (right) await this.s.limits.refund({ limit: 'code_failures.account', subject: account.email });
  }

  /**
   * Checks a code against the user's live one, locking it. Right: its id (use it with `use` in the
   * same transaction). Wrong: a failure is counted (the fifth kills the code) and null is
   * answered, as for expired, used or missing codes.
   */
  async check(userId: string, purpose: store.CodePurpose, code: string): Promise<number | null> {
    const live = await store.lockLiveCode(this.s.db, userId, purpose, this.s.now(), CODE_MAX_FAILURES);
    if (live && this.s.config.keys.oneTimeCodes.verify(`${purpose}:${userId}:${code}`, live.codeHash)) return live.id;
    if (live) await store.countFailure(this.s.db, live.id);
    return null;
  }

  /** Uses a checked code up; false when a concurrent request used it first. */
  use(codeId: number): Promise<boolean> {
    return store.useCode(this.s.db, codeId, this.s.now());
  }

  /** `check` then `use`. */
  async consume(userId: string, purpose: store.CodePurpose, code: string): Promise<boolean> {
    const id = await this.check(userId, purpose, code);
    return id !== null && (await this.use(id));
  }

  /** Retention: deletes codes (used ones included) that expired before `before`. */
  pruneDead(before: Date): Promise<number> {
    return store.deleteExpiredCodes(this.s.db, before, 1_000);
  }
}
