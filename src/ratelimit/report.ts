// What the named limits counted while answering one request: the budget of each limit it touched
// and what is left of it, for the request's RateLimit-Policy and RateLimit headers. A request
// gets one when its operation reports its limits (src/http/rate-limit-headers.ts); the limits it
// counts write into it as they go (Limits), refunds and resets included, so the headers say what
// is left once the request is done.
import type { Budget, LimitName, LimitObserver } from './limits';

export interface LimitUse {
  limit: LimitName;
  max: number;
  windowSeconds: number;
  /** Attempts counted in the current window. */
  used: number;
  /** Seconds until the window ends and the budget is whole again. */
  resetSeconds: number;
}

export class LimitReport implements LimitObserver {
  private readonly uses = new Map<LimitName, LimitUse>();

  counted(limit: LimitName, budget: Budget, used: number, resetSeconds: number): void {
    this.uses.set(limit, { limit, max: budget.max, windowSeconds: budget.windowSeconds, used, resetSeconds });
  }

  refunded(limit: LimitName): void {
    const use = this.uses.get(limit);
    if (use) use.used = Math.max(0, use.used - 1);
  }

  /** The window was forgotten: the next attempt starts a new one, with the whole budget. */
  reset(limit: LimitName, budget: Budget): void {
    this.uses.set(limit, { limit, max: budget.max, windowSeconds: budget.windowSeconds, used: 0, resetSeconds: budget.windowSeconds });
  }

  /** Every limit the request touched, in the order it first did. */
  all(): LimitUse[] {
    return [...this.uses.values()];
  }
}
