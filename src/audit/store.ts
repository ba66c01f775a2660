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

export async function insertAuditEvent(trx: Knex | Knex.Transaction, event: AuditEventInput): Promise<string> {
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

/** Clears ip and user agent of every event the user acted in (the actor id stays, a pseudonym). */
export async function eraseActorDetails(db: Knex | Knex.Transaction, userId: string): Promise<number> {
  return db('audit_events').where({ actor_id: userId }).where((q) => q.whereNotNull('ip').orWhereNotNull('user_agent')).update({ ip: null, user_agent: null });
}

/**
 * Event data that names an address keeps it under `to` or `email` (ops.mail.test_sent…): removed
 * for the erased address. Only the actions known to record one are scanned (action index).
 */
export const ACTIONS_WITH_ADDRESS = ['ops.mail.test_sent'];

export async function eraseAddressInData(db: Knex | Knex.Transaction, email: string): Promise<number> {
  return db('audit_events')
    .whereIn('action', ACTIONS_WITH_ADDRESS)
    .where((q) => q.whereRaw("data->>'to' = ?", [email]).orWhereRaw("data->>'email' = ?", [email]))
    .update({ data: db.raw(`data - 'to' - 'email' || '{"erased": true}'::jsonb`) });
}
