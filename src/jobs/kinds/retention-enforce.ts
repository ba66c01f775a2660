import type { AppContext } from '../../app-context';
import type { JobKind } from '../kinds';
import { deleteFinalizedBefore } from '../store';

const DAY = 24 * 3600 * 1000;
const BATCH = 1_000;

/** Deletes what has outlived its retention period, in batches, logging what it removed. */
export const retentionEnforce: JobKind<AppContext, Record<string, never>> = {
  name: 'service.retention.enforce',
  description: 'Deletes records past their retention period: finalized job runs (30 days) and sent mail records (30 days).',
  defaults: { enabled: true, max_attempts: 3, priority: 0, queue: 'maintenance', schedule: '0 3 * * *', timeout: '30m0s' },
  needsPayload: false,
  async handle(_payload, { services, logger, signal }) {
    const now = services.now().getTime();
    const jobRuns = await deleteFinalizedBefore(services.db, new Date(now - 30 * DAY), BATCH);
    signal.throwIfAborted();
    let mail = 0;
    for (;;) {
      const n = await services
        .db('mail_messages')
        .whereIn('id', services.db('mail_messages').select('id').where('sent_at', '<', new Date(now - 30 * DAY)).limit(BATCH))
        .delete();
      mail += n;
      signal.throwIfAborted();
      if (n < BATCH) break;
    }
    logger.info('retention enforced', { job_runs_deleted: jobRuns, mail_messages_deleted: mail });
  },
};
