// The domain services, built over one database handle: the pool (`app.services`) or one
// transaction (`services.transaction(tx => …)`). A service method called on a transaction's
// services runs inside that transaction, so an operation that spans domains ("delete the account
// unless last owner", "accept an invitation: membership + audit + mail") commits or fails as one.
//
// `transaction` joins the caller's transaction when there is one (Unleash's `withTransactional`):
// a service can always wrap its own work in `this.s.transaction(...)` and still compose. Job runs
// enqueued inside a transaction are handed to BullMQ once, after the outermost commit.
//
// Rate limits (Redis) and password hashing (bcrypt) refuse to run on a transaction's services: a
// Redis round trip or 250 ms of bcrypt inside an open transaction holds a connection and its locks.
// One exception, asked for by name (`transaction(fn, { limitsInside: true })`): the transaction a
// request with an Idempotency-Key runs its whole operation in (src/http/idempotent-call.ts), where
// an operation that counts a limit between its own transactions (invitations, verification mail)
// now counts it inside the one transaction. A Redis round trip is about a millisecond; that path is
// opt-in per request, and bcrypt stays refused there (no keyed operation hashes a password).
import type { Knex } from 'knex';
import type { Config } from './config';
import type { Logger } from './logger';
import type { Db } from './platform/database';
import type { RedisClient } from './platform/redis';
import type { JobSystem } from './jobs/system';
import type { JobRun } from './jobs/run-lifecycle-store';
import type { Mailer } from './mail/mailer';
import type { RuntimeSettings } from './settings/runtime';
import type { SocialProviders } from './social/providers';
import type { Metrics } from './platform/metrics';
import type { LimitObserver } from './ratelimit/limits';
import { AuditService } from './audit/service';
import { SessionService } from './sessions/service';
import { Limits } from './ratelimit/limits';
import { JobOutbox } from './jobs/outbox';
import { MailService } from './mail/service';
import { PasswordHasher } from './accounts/passwords';
import { OneTimeCodes } from './accounts/one-time-codes';
import { AccountService } from './accounts/service';
import { EmailVerificationService } from './accounts/email-verification';
import { PasswordResetService } from './accounts/password-reset';
import { OperatorGrants } from './accounts/operators';
import { JobRunsService } from './jobs/runs';
import { QueuesService } from './jobs/queues';
import { JobDefinitionsService } from './jobs/definitions';
import { ReleaseService } from './releases/service';
import { OrgService } from './orgs/service';
import { InvitationService } from './orgs/invitations';
import { ProjectService } from './projects/service';
import { TotpService } from './mfa/totp';
import { RecoveryCodes } from './mfa/recovery-codes';
import { MfaService } from './mfa/service';
import { SignInChallenges } from './sessions/challenges';
import { SignInService } from './signin/service';
import { StepUp } from './signin/step-up';
import { PasskeyService } from './passkeys/service';
import { SettingsService } from './settings/service';
import { RetentionService } from './retention/service';
import { SocialService } from './social/service';
import { IdentityService } from './social/identities';
import { IdempotencyService } from './idempotency/service';
import { setTenantContext, type TenantContext } from './platform/tenant-context';

/** The long-lived parts the services use (built once by the composition root, src/app-context-factory.ts). */
export interface Platform {
  config: Config;
  logger: Logger;
  db: Db;
  redis: RedisClient;
  jobs: JobSystem;
  mailer: Mailer;
  /** The runtime settings in force (environment defaults, operators' overrides), kept current across instances. */
  runtimeSettings: RuntimeSettings;
  socialProviders: SocialProviders;
  metrics: Metrics;
  now: () => Date;
}

/** How a scope's rate limits behave. */
export interface LimitOptions {
  /** Hears of every count: the request's RateLimit headers (src/http/rate-limit-headers.ts). */
  report?: LimitObserver;
  /** Limits may be counted inside this transaction (the exception above). */
  inside?: boolean;
}

/**
 * Every service, built once per scope and wired to its collaborators. It satisfies each service's
 * own `Scope<{ … }>`: a service sees only what it declared.
 */
export class Services {
  private readonly made = new Map<string, unknown>();

  constructor(
    readonly platform: Platform,
    /** The open transaction these services run in; null: the pool. */
    readonly trx: Knex.Transaction | null = null,
    /** Runs enqueued in this transaction, handed over after commit; null outside a transaction. */
    private readonly pendingRuns: JobRun[] | null = null,
    private readonly limitOptions: LimitOptions = {},
  ) {}

  /** Where queries go: the transaction, else the platform's pool (read on each use). */
  get db(): Db {
    return this.trx ?? this.platform.db;
  }

  get inTransaction(): boolean {
    return this.pendingRuns !== null;
  }

  get config(): Config {
    return this.platform.config;
  }

  get logger(): Logger {
    return this.platform.logger;
  }

  /** The runtime settings in force (read at each use: an operator may change them at any time). */
  get runtimeSettings(): RuntimeSettings {
    return this.platform.runtimeSettings;
  }

  get jobSystem(): JobSystem {
    return this.platform.jobs;
  }

  get mailer(): Mailer {
    return this.platform.mailer;
  }

  get socialProviders(): SocialProviders {
    return this.platform.socialProviders;
  }

  get metrics(): Metrics {
    return this.platform.metrics;
  }

  now(): Date {
    return this.platform.now();
  }

  /**
   * Runs `fn` in one transaction with services bound to it (or in the caller's, when this scope
   * is one). After the commit, the job runs enqueued inside are handed over to BullMQ.
   * `limitsInside`: rate limits may be counted inside (only the keyed request's transaction).
   */
  async transaction<T>(fn: (tx: Services) => Promise<T>, options: { limitsInside?: boolean } = {}): Promise<T> {
    if (this.pendingRuns) return fn(this);
    const pending: JobRun[] = [];
    const limits: LimitOptions = { report: this.limitOptions.report, inside: options.limitsInside };
    const result = await this.platform.db.transaction((trx) => fn(new Services(this.platform, trx, pending, limits)));
    if (pending.length) await this.platform.jobs.handOver(pending);
    return result;
  }

  /**
   * `transaction`, with row-level security told who is acting (and in which organisation): every
   * read or write of tenant data goes through here, or through OrgService.inOrg, whose first
   * statement (app_enter_org) sets the same context. Called on a transaction's services, it
   * changes the acting context for the rest of that transaction.
   */
  actingAs<T>(who: TenantContext, fn: (tx: Services) => Promise<T>): Promise<T> {
    return this.transaction(async (tx) => {
      await setTenantContext(tx.trx!, who);
      return fn(tx);
    });
  }

  /** Called by the outbox for every run it writes in this scope. */
  enqueued(run: JobRun): boolean {
    if (!this.pendingRuns) return false;
    this.pendingRuns.push(run);
    return true;
  }

  private once<T>(name: string, make: () => T): T {
    let service = this.made.get(name) as T | undefined;
    if (service === undefined) {
      service = make();
      this.made.set(name, service);
    }
    return service;
  }

  get audit(): AuditService {
    return this.once('audit', () => new AuditService(this));
  }

  get sessions(): SessionService {
    return this.once('sessions', () => new SessionService(this));
  }

  get limits(): Limits {
    return this.once(
      'limits',
      () => new Limits(this.platform.redis, this.config.redisPrefix, this.platform.runtimeSettings, this.inTransaction && !this.limitOptions.inside, this.limitOptions.report),
    );
  }

  get passwords(): PasswordHasher {
    return this.once('passwords', () => new PasswordHasher(this.config.auth.bcryptCost, this.inTransaction));
  }

  get outbox(): JobOutbox {
    return this.once('outbox', () => new JobOutbox(this));
  }

  get mail(): MailService {
    return this.once('mail', () => new MailService(this));
  }

  get codes(): OneTimeCodes {
    return this.once('codes', () => new OneTimeCodes(this));
  }

  get accounts(): AccountService {
    return this.once('accounts', () => new AccountService(this));
  }

  get operators(): OperatorGrants {
    return this.once('operators', () => new OperatorGrants(this));
  }

  get challenges(): SignInChallenges {
    return this.once('challenges', () => new SignInChallenges(this));
  }

  get signIn(): SignInService {
    return this.once('signIn', () => new SignInService(this));
  }

  get stepUp(): StepUp {
    return this.once('stepUp', () => new StepUp(this));
  }

  get mfa(): MfaService {
    return this.once('mfa', () => new MfaService(this));
  }

  get totp(): TotpService {
    return this.once('totp', () => new TotpService(this));
  }

  get recoveryCodes(): RecoveryCodes {
    return this.once('recoveryCodes', () => new RecoveryCodes(this));
  }

  get passkeys(): PasskeyService {
    return this.once('passkeys', () => new PasskeyService(this));
  }

  get emailVerification(): EmailVerificationService {
    return this.once('emailVerification', () => new EmailVerificationService(this));
  }

  get passwordReset(): PasswordResetService {
    return this.once('passwordReset', () => new PasswordResetService(this));
  }

  get jobRuns(): JobRunsService {
    return this.once('jobRuns', () => new JobRunsService(this));
  }

  get queues(): QueuesService {
    return this.once('queues', () => new QueuesService(this));
  }

  get jobDefinitions(): JobDefinitionsService {
    return this.once('jobDefinitions', () => new JobDefinitionsService(this));
  }

  get releases(): ReleaseService {
    return this.once('releases', () => new ReleaseService(this));
  }

  get orgs(): OrgService {
    return this.once('orgs', () => new OrgService(this));
  }

  get invitations(): InvitationService {
    return this.once('invitations', () => new InvitationService(this));
  }

  get projects(): ProjectService {
    return this.once('projects', () => new ProjectService(this));
  }

  get settings(): SettingsService {
    return this.once('settings', () => new SettingsService(this));
  }

  get social(): SocialService {
    return this.once('social', () => new SocialService(this));
  }

  get identities(): IdentityService {
    return this.once('identities', () => new IdentityService(this));
  }

  get retention(): RetentionService {
    return this.once('retention', () => new RetentionService(this));
  }

  get idempotency(): IdempotencyService {
    return this.once('idempotency', () => new IdempotencyService(this));
  }
}
