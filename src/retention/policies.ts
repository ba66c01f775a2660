// The retention policies (DESIGN 4): what each deletes, the runtime setting that says how long it
// is kept, and how it is enforced — each domain through its own service, in batches (short
// statements, no long locks). Enforced in this order by `service.retention.enforce`.
import type { Scope } from '../platform/scope';
import type { AuditService } from '../audit/service';
import type { OrgService } from '../orgs/service';
import type { OneTimeCodes } from '../accounts/one-time-codes';
import type { SignInChallenges } from '../sessions/challenges';
import type { SessionService } from '../sessions/service';
import type { PasskeyService } from '../passkeys/service';
import type { SocialService } from '../social/service';
import type { ReleaseService } from '../releases/service';
import type { JobRunsService } from '../jobs/runs';
import type { JobDefinitionsService } from '../jobs/definitions';
import type { MailService } from '../mail/service';
import type { IdempotencyService } from '../idempotency/service';
import type { SettingKey } from '../config/settings-catalog';

/** Every domain a policy deletes through. */
export type RetentionScope = Scope<{
  audit: AuditService;
  orgs: OrgService;
  codes: OneTimeCodes;
  challenges: SignInChallenges;
  sessions: SessionService;
  passkeys: PasskeyService;
  social: SocialService;
  releases: ReleaseService;
  jobRuns: JobRunsService;
  jobDefinitions: JobDefinitionsService;
  mail: MailService;
  idempotency: IdempotencyService;
}>;

export interface RetentionPolicy {
  name: string;
  appliesTo: string;
  setting: SettingKey;
  /** Deletes what ended before `before`; how many records. */
  enforce(s: RetentionScope, before: Date): Promise<number>;
}

export const RETENTION_POLICIES: RetentionPolicy[] = [
  {
    name: 'audit_events',
    appliesTo: 'Audit events older than `keep`.',
    setting: 'retention.audit_events',
    enforce: async (s, before) => {
      const deleted = await s.audit.pruneBefore(before);
      // The day's closed hours and days go into the stats rollups now, not on a stats request.
      await s.audit.refreshRollups();
      return deleted;
    },
  },
  {
    name: 'deleted_organisations',
    appliesTo: 'Organisations soft-deleted longer than `keep` ago (no longer restorable), purged with their projects, members and invitations.',
    setting: 'retention.deleted_organisations',
    enforce: (s, before) => s.orgs.purgeDeleted(before),
  },
  {
    name: 'expired_codes',
    appliesTo:
      'Email verification and password reset codes, sign-in challenges, passkey ceremonies, social sign-in states and nonces used or expired, and provider notification ids received, longer than `keep` ago.',
    setting: 'retention.expired_codes',
    enforce: async (s, before) =>
      (await s.codes.pruneDead(before)) + (await s.challenges.pruneExpired(before)) + (await s.passkeys.pruneExpiredCeremonies(before)) + (await s.social.pruneExpired(before)),
  },
  {
    name: 'expired_sessions',
    appliesTo: 'Sessions expired or revoked longer than `keep` ago.',
    setting: 'retention.expired_sessions',
    enforce: (s, before) => s.sessions.pruneEnded(before),
  },
  {
    name: 'idempotency_keys',
    // Each key's expiry was fixed when it was recorded (`keep` then): a changed period applies to
    // keys recorded afterwards, so a client is never told less than it was promised.
    appliesTo: 'Idempotency keys and the answers recorded with them, once expired (`keep` after the request that recorded them).',
    setting: 'retention.idempotency_keys',
    enforce: (s) => s.idempotency.pruneExpired(s.now()),
  },
  {
    name: 'instances',
    appliesTo: 'Records of instances stopped or silent longer than `keep` ago (releases without instances go with them).',
    setting: 'retention.instances',
    enforce: (s, before) => s.releases.pruneInstances(before),
  },
  {
    name: 'job_runs',
    appliesTo: 'Job runs finalized (completed, cancelled or discarded) longer than `keep` ago.',
    setting: 'retention.job_runs',
    enforce: (s, before) => s.jobRuns.pruneFinalized(before),
  },
  {
    name: 'sent_mail',
    appliesTo: 'Records of sent email (including messages recorded by the `log` transport) older than `keep`.',
    setting: 'retention.sent_mail',
    enforce: (s, before) => s.mail.pruneSent(before),
  },
];
