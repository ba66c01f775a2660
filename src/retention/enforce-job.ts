import type { JobKind } from '../jobs/kinds';
import type { RetentionService } from './service';

/**
 * Applies every retention policy (policies.ts) with the periods in force (runtime
 * settings `retention.*`), records each policy's count (GET /ops/retention) and logs them.
 */
export const retentionEnforce: JobKind<{ services: { retention: RetentionService } }, Record<string, never>> = {
  name: 'service.retention.enforce',
  description:
    'Deletes data past its retention period (GET /ops/retention lists the policies; the periods are the runtime settings retention.*): audit events, finalized job runs, expired sessions and codes, soft-deleted organisations, instance records and sent mail records.',
  defaults: { enabled: true, max_attempts: 3, priority: 0, queue: 'maintenance', schedule: '0 3 * * *', timeout: '30m0s' },
  needsPayload: false,
  async handle(_payload, { app, logger, signal }) {
    const deleted = await app.services.retention.enforce(() => signal.throwIfAborted());
    logger.info('retention enforced', { deleted, total: Object.values(deleted).reduce((a, b) => a + b, 0) });
  },
};
