import type { AppContext } from '../../app-context';
import type { JobKind } from '../kinds';
import { RESTORE_WINDOW_MS } from '../../orgs/service';

const DAY_MS = 24 * 3600 * 1000;
/** Finalized job runs and sent mail records are kept this long. */
const RETENTION_MS = 30 * DAY_MS;

/**
 * Deletes what has outlived its retention period, each domain through its own service (none of
 * their tables is touched here), and logs how much each removed.
 */
export const retentionEnforce: JobKind<AppContext, Record<string, never>> = {
  name: 'service.retention.enforce',
  description:
    'Deletes records past their retention period: finalized job runs and sent mail records (30 days), expired or revoked sessions, used or expired one-time codes, sign-in challenges and passkey ceremonies expired a day ago, organisations soft-deleted more than 30 days ago (with their projects, memberships and invitations).',
  defaults: { enabled: true, max_attempts: 3, priority: 0, queue: 'maintenance', schedule: '0 3 * * *', timeout: '30m0s' },
  needsPayload: false,
  async handle(_payload, { app, logger, signal }) {
    const services = app.services;
    const now = services.now();
    const before = new Date(now.getTime() - RETENTION_MS);
    const jobRuns = await services.jobRuns.pruneFinalized(before);
    signal.throwIfAborted();
    const mail = await services.mail.pruneSent(before);
    signal.throwIfAborted();
    const sessions = await services.sessions.pruneExpired(now);
    signal.throwIfAborted();
    const codes = await services.codes.pruneDead(now);
    signal.throwIfAborted();
    const challenges = await services.mfa.pruneExpired(now);
    const ceremonies = await services.passkeys.pruneExpiredCeremonies(now);
    signal.throwIfAborted();
    const orgRows = await services.orgs.purgeDeleted(new Date(now.getTime() - RESTORE_WINDOW_MS));
    logger.info('retention enforced', {
      job_runs_deleted: jobRuns,
      mail_messages_deleted: mail,
      sessions_deleted: sessions,
      one_time_codes_deleted: codes,
      mfa_challenges_deleted: challenges,
      webauthn_ceremonies_deleted: ceremonies,
      deleted_organisation_rows_purged: orgRows,
    });
  },
};
