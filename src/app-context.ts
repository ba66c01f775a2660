import type { Config } from './config';
import type { Logger } from './logger';
import type { Db } from './platform/database';
import type { RedisClient } from './platform/redis';
import type { DependencyMonitor } from './platform/dependencies';
import type { Contract } from './http/contract';
import type { JobSystem } from './jobs/system';
import type { Mailer } from './mail/mailer';
import type { Services } from './services';
import type { InstanceRegistry } from './releases/registry';
import type { RuntimeSettings } from './settings/runtime';
import type { SocialProviders } from './social/providers';

/** Everything a request or job needs, built once by the composition root (src/main.ts or a test). */
export interface AppContext {
  config: Config;
  logger: Logger;
  db: Db;
  redis: RedisClient;
  contract: Contract;
  jobs: JobSystem<AppContext>;
  mailer: Mailer;
  /** Which of PostgreSQL and Redis are down; logs each outage once (start and end). */
  dependencies: DependencyMonitor;
  /** The domain services over the pool; `services.transaction(tx => …)` binds them to one transaction. */
  services: Services;
  /** The runtime settings in force (environment defaults, operators' overrides), kept current across instances. */
  settings: RuntimeSettings;
  /** This process as an instance of its release: known from start, recorded and heartbeating once main starts it. */
  instance: InstanceRegistry;
  /** The configured social providers: discovery documents and signing keys, cached. */
  socialProviders: SocialProviders;
  /** Injectable clock: tests move time instead of waiting. */
  now: () => Date;
  state: {
    /** Migrations applied and the database reachable at least once since start. */
    databaseReady: boolean;
    /** SIGTERM received: /readyz answers 503 so load balancers stop sending here (main.ts). */
    shuttingDown: boolean;
  };
}
