import type { Handler } from '../../src/http/handler-types';

export const listRetentionPolicies: Handler<'listRetentionPolicies'> = async ({ services }) => {
  const policies = await services.retention.list();
  return {
    status: 200,
    body: {
      items: policies.map((p) => ({
        name: p.name,
        applies_to: p.appliesTo,
        keep: p.keep,
        setting: p.setting,
        last_run_at: p.lastRunAt?.toISOString() ?? null,
        next_run_at: p.nextRunAt?.toISOString() ?? null,
        last_deleted: p.lastDeleted,
      })),
      next_cursor: null,
    },
  };
};
