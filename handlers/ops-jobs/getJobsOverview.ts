import type { Handler } from '../../src/http/handler-types';

export const getJobsOverview: Handler<'getJobsOverview'> = async ({ services }) => {
  const o = await services.queues.overview();
  return {
    status: 200,
    body: {
      by_state: o.byState,
      by_kind: o.byKind,
      queues: o.queues,
      oldest_waiting_age_seconds: o.oldestWaitingAgeSeconds,
      failures_last_24h: o.failuresLast24h,
      generated_at: o.generatedAt.toISOString(),
    },
  };
};
