// Audit events: written inside the caller's transaction, so an event exists exactly when its change does.
import type { Knex } from 'knex';
import { newId } from '../ids';
import { prepared, runPrepared } from '../platform/prepared';

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

const INSERT_AUDIT_EVENT = prepared(
  'audit_events.insert',
  `insert into audit_events (id, action, actor_kind, actor_id, target_kind, target_id, org_id, ip, user_agent, request_id, data)
   values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
);

export async function recordAudit(trx: Knex | Knex.Transaction, event: AuditEventInput): Promise<string> {
  const id = newId('aud');
  await runPrepared(trx, INSERT_AUDIT_EVENT, [
    id,
    event.action,
    event.actor.kind,
    event.actor.id,
    event.target?.kind ?? null,
    event.target?.id ?? null,
    event.orgId ?? null,
    event.meta?.ip ?? null,
    event.meta?.userAgent?.slice(0, 512) ?? null,
    event.meta?.requestId ?? null,
    JSON.stringify(event.data ?? {}),
  ]);
  return id;
}
