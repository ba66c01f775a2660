// Sessions: created at sign-in, resolved on every request, listed and revoked by their owner,
// revoked in bulk by password changes and account deletion. Audit events in the same transaction
// (or, for a new session, the same statement).
import type { AuditEventInput, RequestMeta } from '../audit/service';
import type { Scope } from '../platform/scope';
import type { RuntimeSettings } from '../settings/runtime';
import type { AuditService } from '../audit/service';
import { commonErrors } from '../errors';
import { pageById, type Page, type PageRequest } from '../pagination';
import * as store from './store';
import { durationMs } from '../config/settings-catalog';
import type { Caller, NewSession, SessionRow } from './store';
import { sessionEndsAt } from './expiry';

export type { Caller, NewSession, SessionRow, SessionUser } from './store';
export type Transport = 'cookie' | 'bearer';

/** The setting's text, parsed again only when it changes (every authenticated request reads it). */
let idleTimeout = { text: '', seconds: 0 };
function idleTimeoutSeconds(text: string): number {
  if (text !== idleTimeout.text) idleTimeout = { text, seconds: durationMs(text) / 1000 };
  return idleTimeout.seconds;
}

type Deps = Scope<{ runtimeSettings: RuntimeSettings; audit: AuditService }>;

export class SessionService {
  constructor(private readonly s: Deps) {}

  /** The idle timeout is a runtime setting: a change applies at once to every session. */
  get policy(): store.SessionPolicy {
    return {
      idleTimeoutSeconds: idleTimeoutSeconds(this.s.runtimeSettings.get('auth.session_idle_timeout')),
      absoluteLifetimeSeconds: this.s.config.session.absoluteLifetimeSeconds,
    };
  }

  /**
   * A new session for the user and the audit event `event` makes of it (its id is the event's
   * target), in one statement: the event commits with the session, inside a transaction or without
   * one. Its `expiresAt` is when it ends if it is not used: the idle expiry, unless the absolute
   * one comes first.
   */
  async start(
    input: { userId: string; transport: Transport; ip?: string | null; userAgent?: string | null; identityId?: string | null },
    event: (session: { id: string }) => AuditEventInput,
  ): Promise<NewSession> {
    const policy = this.policy;
    const now = this.s.now();
    const { session, values } = store.newSession(input, policy, now);
    await this.s.audit.recordWith(store.INSERT_SESSION_AUDITED, values, event(session));
    return { ...session, expiresAt: sessionEndsAt(now, session.expiresAt, policy.idleTimeoutSeconds) };
  }

  /** The live session of a token and its user (with their second factors if asked), in one round trip; null when there is none. */
  findLive(token: string, opts: { secondFactors?: boolean } = {}): Promise<Caller | null> {
    return store.findLiveSession(this.s.db, token, this.policy, this.s.now(), opts.secondFactors);
  }

  /** GET /v1/auth/sessions: the caller's live sessions, newest first, a page at a time. */
  listOwn(caller: Caller, request: PageRequest): Promise<Page<SessionRow & { current: boolean }>> {
    return pageById('ses', request, async (limit, beforeId) => {
      const rows = await store.listLiveSessions(this.s.db, caller.userId, this.policy, this.s.now(), limit, beforeId);
      return rows.map((r) => ({ ...r, current: r.id === caller.sessionId }));
    });
  }

  /**
   * DELETE /v1/auth/sessions/{id}: revokes one of the caller's live sessions (`auth.session.revoked`).
   * 404 for another user's session, an unknown id, or one already revoked or expired. `current`
   * tells whether it was the caller's own (the edge then clears the cookie, as logout does).
   */
  async revokeOwn(caller: Caller, sessionId: string, meta: RequestMeta): Promise<{ current: boolean }> {
    const current = sessionId === caller.sessionId;
    await this.s.transaction(async (tx) => {
      const revoked = await store.revokeSession(tx.db, caller.userId, sessionId, this.policy, tx.now());
      if (!revoked) throw commonErrors.notFound('No such session.');
      await tx.audit.record({ action: 'auth.session.revoked', actor: { kind: 'user', id: caller.userId }, target: { kind: 'session', id: sessionId }, data: { current }, meta });
    });
    return { current };
  }

  /** POST /v1/auth/logout: revokes the caller's own session (`auth.logout`). */
  async logout(caller: Caller, meta: RequestMeta): Promise<void> {
    await this.s.transaction(async (tx) => {
      await store.revokeSession(tx.db, caller.userId, caller.sessionId, this.policy, tx.now());
      await tx.audit.record({ action: 'auth.logout', actor: { kind: 'user', id: caller.userId }, target: { kind: 'session', id: caller.sessionId }, meta });
    });
  }

  /** POST /v1/auth/logout-all: revokes every other session of the caller; how many (`auth.logout_all`). */
  async logoutOthers(caller: Caller, meta: RequestMeta): Promise<number> {
    return this.s.transaction(async (tx) => {
      const revoked = await store.revokeOtherSessions(tx.db, caller.userId, caller.sessionId, tx.now());
      await tx.audit.record({
        action: 'auth.logout_all',
        actor: { kind: 'user', id: caller.userId },
        target: { kind: 'user', id: caller.userId },
        data: { revoked, kept: caller.sessionId },
        meta,
      });
      return revoked;
    });
  }

  /** Revokes every live session signed in with a social identity (the provider withdrew it); how many. */
  revokeSignedInWith(identityId: string): Promise<number> {
    return store.revokeIdentitySessions(this.s.db, identityId, this.s.now());
  }

  /** Revokes every live session of the user but `keepId` (none kept when null); how many. */
  revokeAllOf(userId: string, keepId: string | null): Promise<number> {
    return store.revokeOtherSessions(this.s.db, userId, keepId, this.s.now());
  }

  /**
   * Deletes sessions that ended before `before` (kept till then so what the owner saw stays
   * explainable): expired, revoked, or idle past the idle timeout in force.
   */
  pruneEnded(before: Date): Promise<number> {
    return store.deleteDeadSessions(this.s.db, before, this.policy.idleTimeoutSeconds * 1000, 1_000);
  }
}
