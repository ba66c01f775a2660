import type { Config } from './config';
import type { Logger } from './logger';
import type { Db } from './platform/database';
import type { RedisClient } from './platform/redis';
import type { DependencyMonitor } from './platform/dependencies';
import type { Contract } from './http/contract';
import type { JobSystem } from './jobs/system';
import type { Mailer } from './mail/mailer';
import type { Services } from './services';

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
  /** Injectable clock: tests move time instead of waiting. */
  now: () => Date;
  state: {
    /** Migrations applied and the database reachable at least once since start. */
    databaseReady: boolean;
  };
}
