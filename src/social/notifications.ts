// provider_b's server-to-server notifications (DESIGN 2), as Sign in with Apple sends them: a JWT
// signed with the provider's keys whose `events` claim (a JSON string, or an object) names the
// event and the subject. Each is handled once (by `jti`) and audited; the four known types act
// on the identity, unknown ones are acknowledged and logged.
import { createHash } from 'node:crypto';
import { jwtVerify, type JWTPayload } from 'jose';
import type { Scope } from '../platform/scope';
import type { AuditService, RequestMeta } from '../audit/service';
import type { SessionService } from '../sessions/service';
import { ProviderUnreachable, type SocialProviders } from './providers';
import { providerUnavailable, socialErrors } from './errors';
import * as store from './store';

const PROVIDER = 'provider_b' as const;
const MAX_AGE = '1h';
const KNOWN_TYPES = new Set(['email-disabled', 'email-enabled', 'consent-revoked', 'account-delete']);

interface NotificationEvent {
  type: string;
  sub: string | null;
}

function eventOf(payload: JWTPayload): NotificationEvent {
  let events: unknown = payload.events;
  if (typeof events === 'string') {
    try {
      events = JSON.parse(events);
    } catch {
      events = null;
    }
  }
  const e = (events ?? {}) as Record<string, unknown>;
  return { type: typeof e.type === 'string' ? e.type.slice(0, 100) : 'unknown', sub: typeof e.sub === 'string' ? e.sub : null };
}

export type NotificationResult = { duplicate: boolean; type: string };

/**
 * POST /v1/auth/provider_b/notifications: 401 `invalid_signature` unless the payload is signed by
 * the provider for one of our client ids and at most an hour old.
 */
export async function handleNotification(s: Scope<{ socialProviders: SocialProviders; audit: AuditService; sessions: SessionService }>, token: string, meta: RequestMeta): Promise<NotificationResult> {
  const providers = s.socialProviders;
  const settings = providers.settings(PROVIDER);
  const client = await providers.client(PROVIDER);
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, client.keys, {
      issuer: settings.issuer,
      audience: settings.clientIds,
      algorithms: client.algorithms,
      currentDate: s.now(),
      clockTolerance: providers.clockSkewSeconds,
      maxTokenAge: MAX_AGE,
      requiredClaims: ['iat'],
    }));
  } catch (err) {
    if (err instanceof ProviderUnreachable) throw providerUnavailable();
    s.logger.warn('provider notification refused', { provider: PROVIDER, error: String(err) });
    throw socialErrors.invalidSignature();
  }
  const event = eventOf(payload);
  // Without a jti, the token itself identifies the notification.
  const jti = typeof payload.jti === 'string' ? payload.jti.slice(0, 200) : createHash('sha256').update(token).digest('hex');
  return s.transaction(async (tx) => {
    if (!(await store.recordNotification(tx.db, PROVIDER, jti, tx.now()))) return { duplicate: true, type: event.type };
    const identity = event.sub ? await store.findIdentity(tx.db, PROVIDER, event.sub) : null;
    const actor = { kind: 'provider' as const, id: PROVIDER };
    const known = KNOWN_TYPES.has(event.type);
    await tx.audit.record({
      action: 'social.notification.received',
      actor,
      target: identity ? { kind: 'identity', id: identity.id } : null,
      data: { provider: PROVIDER, type: event.type, known, identity_found: identity !== null, user_id: identity?.userId ?? null },
      meta,
    });
    if (!known) s.logger.info('provider notification of an unknown type acknowledged', { provider: PROVIDER, type: event.type });
    if (!identity) return { duplicate: false, type: event.type };
    if (event.type === 'email-disabled' || event.type === 'email-enabled') {
      await store.setEmailForwarding(tx.db, identity.id, event.type === 'email-enabled');
    } else if (event.type === 'consent-revoked' || event.type === 'account-delete') {
      // The sessions first: deleting the identity clears their link to it.
      const revoked = await tx.sessions.revokeSignedInWith(identity.id);
      await store.deleteIdentity(tx.db, identity.id);
      await tx.audit.record({
        action: 'social.identity.unlinked',
        actor,
        target: { kind: 'identity', id: identity.id },
        data: { provider: PROVIDER, via: event.type, user_id: identity.userId, sessions_revoked: revoked },
        meta,
      });
    }
    return { duplicate: false, type: event.type };
  });
}
