// What every domain service stands on, declared here (below every domain) so that a service names
// the collaborators it needs in its own terms — `Scope<{ audit: AuditService }>` — without
// importing the composition root (src/services.ts) that builds them all.
import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Db } from './database';
import type { TenantContext } from './tenant-context';

/**
 * What a service's scope always has. `transaction` gives the same scope bound to one transaction
 * (joining the caller's when there is one), so that a change spanning domains commits or fails as
 * one; `actingAs` is `transaction` with row-level security told who is acting
 * (src/platform/tenant-context.ts). `this` is the whole scope: a service that declared
 * `Scope<{ audit: AuditService }>` gets its `audit` bound to the transaction too.
 */
interface ScopeBase {
  /** Where queries go: the open transaction, else the pool. */
  readonly db: Db;
  /** The open transaction; null over the pool. */
  readonly trx: Knex.Transaction | null;
  readonly inTransaction: boolean;
  readonly config: Config;
  readonly logger: Logger;
  /** Injectable clock: tests move time instead of waiting. */
  now(): Date;
  transaction<T>(fn: (tx: this) => Promise<T>): Promise<T>;
  actingAs<T>(who: TenantContext, fn: (tx: this) => Promise<T>): Promise<T>;
}

/** A service's scope: the base and the collaborators `C` it declares. */
export type Scope<C = unknown> = ScopeBase & C;
