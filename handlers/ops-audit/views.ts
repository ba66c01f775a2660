// Domain → API shape of an audit event (one place, for the list and the single event).
import type { components } from '../../codegen/api-types';
import type { AuditEvent } from '../../src/audit/service';
import { isoString } from '../../src/platform/timestamps';

export function toApiEvent(event: AuditEvent): components['schemas']['AuditEvent'] {
  return {
    id: event.id,
    at: isoString(event.at),
    action: event.action,
    actor: event.actor,
    target: event.target,
    org_id: event.orgId,
    ip: event.ip,
    user_agent: event.userAgent,
    request_id: event.requestId,
    data: event.data,
  };
}
