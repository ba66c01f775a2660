import type { Handler } from '../../src/http/handler-types';
import { toApiEvent } from './views';

export const listAuditEvents: Handler<'listAuditEvents'> = async ({ services, query }) => {
  const { items, nextCursor } = await services.audit.list(
    { action: query.action, actorId: query.actor_id, orgId: query.org_id, targetId: query.target_id, since: query.since, until: query.until },
    { limit: query.limit, cursor: query.cursor },
  );
  return { status: 200, body: { items: items.map(toApiEvent), next_cursor: nextCursor } };
};
