// Audit events as other domains write them: on the services' database handle, so inside a
// transaction the event commits exactly when the change it describes does.
import type { Executor } from '../services';
import * as store from './store';

export type { Actor, ActorKind, AuditEventInput, RequestMeta } from './store';

export class AuditService {
  constructor(private readonly deps: { db: Executor }) {}

  record(event: store.AuditEventInput): Promise<string> {
    return store.insertAuditEvent(this.deps.db, event);
  }

  /**
   * A deleted account's personal data in audit events: its own events keep only the pseudonymous
   * actor id (ip and user agent cleared), and addresses recorded in event data are removed.
   */
  async erasePersonalData(userId: string, email: string): Promise<void> {
    await store.eraseActorDetails(this.deps.db, userId);
    await store.eraseAddressInData(this.deps.db, email);
  }
}
