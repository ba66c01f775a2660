import type { Handler } from '../../src/http/handler-types';

export const getAuditStats: Handler<'getAuditStats'> = async ({ services, query }) => {
  const stats = await services.audit.stats({ since: query.since, until: query.until, action: query.action });
  return {
    status: 200,
    body: { since: stats.since.toISOString(), until: stats.until.toISOString(), total: stats.total, by_action: stats.byAction, by_day: stats.byDay },
  };
};
