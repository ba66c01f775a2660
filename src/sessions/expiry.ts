// When a session ends: at its idle expiry (last use + the idle timeout, a runtime setting) or at
// its absolute expiry (sign-in + SESSION_ABSOLUTE_LIFETIME_SECONDS), whichever comes first. What
// clients are told (`expires_at`, the cookie's Max-Age) is this moment, not the absolute one:
// a client that waits past the idle expiry finds its session gone.

export function sessionEndsAt(lastSeenAt: Date, absoluteExpiresAt: Date, idleTimeoutSeconds: number): Date {
  return new Date(Math.min(lastSeenAt.getTime() + idleTimeoutSeconds * 1000, absoluteExpiresAt.getTime()));
}
