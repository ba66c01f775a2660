import type { Contract } from './contract';
import type { JobSystem } from './jobs/system';
import type { DependencyMonitor } from './platform/dependencies';
import type { Platform, Services } from './services';
import type { InstanceRegistry } from './releases/registry';
import type { Metrics } from './platform/metrics';

/** Everything a request or job needs, built once by the composition root (src/main.ts or a test). */
export interface AppContext extends Platform {
  contract: Contract;
  jobs: JobSystem<AppContext>;
  /** Which of PostgreSQL and Redis are down; logs each outage once (start and end). */
  dependencies: DependencyMonitor;
  /** The domain services over the pool; `services.transaction(tx => …)` binds them to one transaction. */
  services: Services;
  /** This process as an instance of its release: known from start, recorded and heartbeating once main starts it. */
  instance: InstanceRegistry;
  /** Prometheus metrics of this instance (served on METRICS_PORT when set). */
  metrics: Metrics;
  state: {
    /** Migrations applied and the database reachable at least once since start. */
    databaseReady: boolean;
    /** SIGTERM received: /readyz answers 503 so load balancers stop sending here (main.ts). */
    shuttingDown: boolean;
  };
}
