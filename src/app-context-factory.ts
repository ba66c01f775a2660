import type { AppContext } from './app-context';
import type { Config } from './config';
import type { Logger } from './logger';
import type { Db } from './platform/database';
import { pingRedis, type RedisClient } from './platform/redis';
import { pingDatabase } from './platform/database';
import { DependencyMonitor, reportRedisConnection } from './platform/dependencies';
import { loadContract } from './contract';
import { JobSystem } from './jobs/system';
import { JobRegistry, type JobKind } from './jobs/kinds';
import type { JobTiming } from './jobs/timing';
import { mailSend } from './mail/send-job';
import { passwordResetSend } from './accounts/password-reset-job';
import { retentionEnforce } from './retention/enforce-job';
import { Mailer } from './mail/mailer';
import { Services } from './services';
import { Metrics } from './platform/metrics';
import { countCommandErrors, countQueryErrors, poolSizes } from './platform/metric-sources';
import { InstanceRegistry } from './releases/registry';
import { RuntimeSettings } from './settings/runtime';
import { SocialProviders } from './social/providers';

/**
 * The job kinds this service declares: add one here (with its defaults) to make it exist. A kind
 * lives with the domain whose work it does and names the services it needs.
 */
export const jobKinds: JobKind<AppContext>[] = [mailSend, passwordResetSend, retentionEnforce];

/** Builds the context every request and job runs with. Tests pass extra job kinds and a clock. */
export function buildAppContext(parts: {
  config: Config;
  logger: Logger;
  db: Db;
  redis: RedisClient;
  now?: () => Date;
  extraJobKinds?: JobKind<AppContext>[];
  /** Shorter job backoff and sweeps (tests). */
  jobTiming?: Partial<JobTiming>;
}): AppContext {
  const now = parts.now ?? (() => new Date());
  const metrics = new Metrics();
  const app = {
    config: parts.config,
    logger: parts.logger,
    db: parts.db,
    redis: parts.redis,
    contract: loadContract(),
    mailer: new Mailer(parts.config.mail, parts.logger, metrics),
    now,
    metrics,
    state: { databaseReady: false, shuttingDown: false },
    socialProviders: new SocialProviders(parts.config.social, parts.logger),
    instance: new InstanceRegistry({ build: parts.config.build, db: () => app.db, logger: parts.logger, now }),
  } as Omit<AppContext, 'jobs' | 'services' | 'dependencies' | 'runtimeSettings'> as AppContext;
  // Probes read app.db and app.redis when they run: a test may swap them.
  app.dependencies = new DependencyMonitor({
    logger: parts.logger,
    probes: { database: () => pingDatabase(app.db), redis: () => pingRedis(app.redis) },
  });
  reportRedisConnection(parts.redis, app.dependencies);
  app.jobs = new JobSystem<AppContext>({
    db: parts.db,
    redis: parts.config.redis,
    dependencies: app.dependencies,
    reapplyQueueStates: () => app.services.queues.reapplyStates(),
    prefix: `${parts.config.redisPrefix}bull`,
    registry: new JobRegistry([...jobKinds, ...(parts.extraJobKinds ?? [])]),
    app: () => app,
    logger: parts.logger,
    metrics,
    now,
    concurrency: parts.config.jobConcurrency,
    timing: parts.jobTiming,
  });
  app.runtimeSettings = new RuntimeSettings({
    defaults: parts.config.settingDefaults.values,
    db: () => app.db,
    redis: parts.redis,
    channel: `${parts.config.redisPrefix}settings`,
    logger: parts.logger,
  });
  app.services = new Services(app);
  countQueryErrors(parts.db, metrics);
  countCommandErrors(parts.redis, metrics);
  // Read when Prometheus scrapes; app.db may be swapped by a test, so it is read then too.
  metrics.observe({
    pool: () => poolSizes(app.db),
    dependencies: () => app.dependencies.states(),
    queueDepths: () => app.jobs.queueDepths(),
    outbox: () => app.jobs.outbox(),
  });
  return app;
}
