// Every named rate limit of the service (DESIGN 6), in one place: its budget and its key.
// Fixed windows in Redis, shared by every instance: `hit` counts one attempt against one or more
// limits in one script (INCR + PEXPIRE NX + PTTL each) and answers 429 `rate_limited` with
// Retry-After when any is spent. There is no check-then-increment: an attempt is counted before
// the work it guards, and `refund` gives it back when it turned out not to count (a right
// password), so concurrent attempts can never all pass a check that only one should.
// The per-IP ceiling (ip-ceiling.ts) is separate: it counts in memory and syncs every 100 ms.
//
// Rate limits keep to their own Redis keys (`<prefix>rl:<limit>:<subject>`): no other module reads
// them. Not callable inside a database transaction (see src/services.ts), but for the one a keyed
// request runs in, which asks for it.
import type { SettingKey, SettingOf } from '../config/settings-catalog';
import { redisScript, runScript, type RedisClient } from '../platform/redis';
import { rateLimited } from '../errors';
import { ipBucket } from './ip-ceiling';

export interface Budget {
  max: number;
  windowSeconds: number;
}

const MINUTE = 60;

/** Reads a runtime setting in force (an operator may change it while the service runs). */
type SettingReader = { get<K extends SettingKey>(key: K): SettingOf<K> };
type Reader = SettingReader;

/** The limits, by name: each with its budget (from the runtime settings) and what it counts per. */
const LIMITS = {
  /** Sign-in attempts per client IP (IPv6 by /64). */
  'login.ip': (s: Reader) => ({ max: s.get('rate_limit.login_per_minute'), windowSeconds: MINUTE }),
  /** Sign-in attempts per address; wrong current passwords count here too. */
  'login.email': (s: Reader) => ({ max: s.get('rate_limit.login_per_minute'), windowSeconds: MINUTE }),
  'register.ip': (s: Reader) => ({ max: s.get('rate_limit.register_per_minute'), windowSeconds: MINUTE }),
  /** Forgot-password requests per address, known or not. */
  'password_forgot.email': (s: Reader) => ({ max: s.get('rate_limit.email_per_15_minutes'), windowSeconds: 15 * MINUTE }),
  'verification_resend.email': (s: Reader) => ({ max: s.get('rate_limit.email_per_15_minutes'), windowSeconds: 15 * MINUTE }),
  /** Wrong fresh proofs per user. */
  'step_up.user': (s: Reader) => ({ max: s.get('rate_limit.step_up_per_15_minutes'), windowSeconds: 15 * MINUTE }),
  /** Wrong one-time codes per account (by address, so unknown addresses count alike), per day. */
  'code_failures.account': (s: Reader) => ({ max: s.get('rate_limit.code_failures_per_day'), windowSeconds: 24 * 60 * MINUTE }),
  /** Recovery-code regenerations per user per hour; every attempt counts (DESIGN 6). */
  'recovery_codes.user': (s: Reader) => ({ max: s.get('rate_limit.recovery_codes_per_hour'), windowSeconds: 60 * MINUTE }),
  /** Invitations an organisation sends per hour (contract: createInvitation). */
  'invitations.org': () => ({ max: 50, windowSeconds: 60 * MINUTE }),
  /** Resends of one invitation per 15 minutes. */
  'invitation_resend.invitation': () => ({ max: 3, windowSeconds: 15 * MINUTE }),
} satisfies Record<string, (s: Reader) => Budget>;

export type LimitName = keyof typeof LIMITS;

/** Told what each count did, for the request's rate-limit headers (LimitReport in report.ts). */
export interface LimitObserver {
  counted(limit: LimitName, budget: Budget, used: number, resetSeconds: number): void;
  refunded(limit: LimitName): void;
  reset(limit: LimitName, budget: Budget): void;
}

/** One attempt against one limit: the limit's name and who it counts for (an address, an IP, a user id). */
export interface Attempt {
  limit: LimitName;
  subject: string;
}

export interface LimitState {
  /** Attempts counted in the current window, this one included. */
  count: number;
  spent: boolean;
  retryAfterSeconds: number;
}

// Per key (KEYS[i], its window in ms ARGV[i]): INCR, PEXPIRE NX (the window starts with its first
// attempt), PTTL. A script, not a MULTI of 3 commands per key: one command to build, send and
// parse on our side, atomic on Redis's all the same.
export const COUNT_ATTEMPTS = redisScript(`local out = {}
for i, key in ipairs(KEYS) do
  out[2 * i - 1] = redis.call('INCR', key)
  redis.call('PEXPIRE', key, ARGV[i], 'NX')
  out[2 * i] = redis.call('PTTL', key)
end
return out`);

export class Limits {
  /**
   * `keyPrefix`: the deployment's Redis prefix; `settings`: where the budgets are read, at each
   * attempt; `inTransaction`: refuse to count (the scope is a transaction that did not allow it);
   * `report`: the request's, which hears of everything counted (its RateLimit headers).
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
    private readonly settings: Reader,
    private readonly inTransaction = false,
    private readonly report?: LimitObserver,
  ) {}

  budget(limit: LimitName): Budget {
    return LIMITS[limit](this.settings);
  }

  /** Counts one attempt against each limit (one round trip); 429 when any of them is spent. */
  async hit(...attempts: Attempt[]): Promise<LimitState[]> {
    const states = await this.count(attempts);
    const first = states.findIndex((s) => s.spent);
    if (first >= 0) throw rateLimited(attempts[first]!.limit, Math.max(...states.filter((s) => s.spent).map((s) => s.retryAfterSeconds)));
    return states;
  }

  /** Counts one attempt against each limit, without throwing. */
  async count(attempts: Attempt[]): Promise<LimitState[]> {
    this.assertOutsideTransaction();
    const budgets = attempts.map((a) => this.budget(a.limit));
    const result = (await runScript(this.redis, COUNT_ATTEMPTS, attempts.map((a) => this.key(a)), budgets.map((b) => b.windowSeconds * 1000))) as number[];
    return attempts.map((a, i) => {
      const state = this.state(budgets[i]!, result[i * 2], result[i * 2 + 1]);
      this.report?.counted(a.limit, budgets[i]!, state.count, state.retryAfterSeconds);
      return state;
    });
  }

  /** Whether the limit is spent, without counting. */
  async peek(attempt: Attempt): Promise<LimitState> {
    this.assertOutsideTransaction();
    const key = this.key(attempt);
    const result = await this.redis.multi().get(key).pttl(key).exec();
    const count = Number(result?.[0]?.[1] ?? 0);
    // peek counts nothing: spent once the window already holds `max` attempts.
    const budget = this.budget(attempt.limit);
    const state = this.state(budget, count + 1, result?.[1]?.[1]);
    this.report?.counted(attempt.limit, budget, count, state.retryAfterSeconds);
    return state;
  }

  /** Gives one counted attempt back (it turned out not to count, e.g. the right password). */
  async refund(attempt: Attempt): Promise<void> {
    this.assertOutsideTransaction();
    const key = this.key(attempt);
    await this.redis.multi().decr(key).exec();
    this.report?.refunded(attempt.limit);
  }

  /** Forgets every attempt of the window (e.g. after a successful step-up). */
  async reset(attempt: Attempt): Promise<void> {
    this.assertOutsideTransaction();
    await this.redis.del(this.key(attempt));
    this.report?.reset(attempt.limit, this.budget(attempt.limit));
  }

  /**
   * Erasure: deletes every window counted for `subject` (an address or a user id), so no key
   * names it any more.
   */
  async forget(subject: string): Promise<void> {
    this.assertOutsideTransaction();
    const keys = (Object.keys(LIMITS) as LimitName[]).filter((l) => !l.endsWith('.ip')).map((limit) => this.key({ limit, subject }));
    await this.redis.del(...keys);
  }

  private state(budget: Budget, rawCount: unknown, rawTtl: unknown): LimitState {
    const count = Number(rawCount ?? 0);
    const ttlMs = Number(rawTtl ?? -1);
    return {
      count,
      spent: count > budget.max,
      retryAfterSeconds: Math.max(1, Math.ceil((ttlMs > 0 ? ttlMs : budget.windowSeconds * 1000) / 1000)),
    };
  }

  private key({ limit, subject }: Attempt): string {
    const bucket = limit.endsWith('.ip') ? ipBucket(subject) : subject;
    return `${this.keyPrefix}rl:${limit}:${bucket}`;
  }

  private assertOutsideTransaction(): void {
    if (this.inTransaction) throw new Error('rate limits are not checked inside a database transaction (a Redis round trip would hold it open)');
  }
}
