// Audit events: written inside the caller's transaction, so an event exists exactly when its change does.
import type { Knex } from 'knex';
import { newId } from '../ids';

export type ActorKind = 'user' | 'operator' | 'system' | 'provider';

export interface Actor {
  kind: ActorKind;
  id: string | null;
}

/** Who asked, from which request: carried from the HTTP edge into the domain. */
export interface RequestMeta {
  requestId: string | null;
  ip: string | null;
  userAgent: string | null;
}

export interface AuditEventInput {
  action: string;
  actor: Actor;
  target?: { kind: string; id: string } | null;
  orgId?: string | null;
  data?: Record<string, unknown>;
  meta?: RequestMeta;
}

export async function recordAudit(trx: Knex | Knex.Transaction, event: AuditEventInput): Promise<string> {
  const id = newId('aud');
  await trx('audit_events').insert({
    id,
    action: event.action,
    actor_kind: event.actor.kind,
    actor_id: event.actor.id,
    target_kind: event.target?.kind ?? null,
    target_id: event.target?.id ?? null,
    org_id: event.orgId ?? null,
    ip: event.meta?.ip ?? null,
    user_agent: event.meta?.userAgent?.slice(0, 512) ?? null,
    request_id: event.meta?.requestId ?? null,
    data: JSON.stringify(event.data ?? {}),
  });
  return id;
}
