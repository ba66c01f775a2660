// The job outbox as domains use it: runs are written on the services' database handle (inside
// the caller's transaction when there is one) and handed to BullMQ after the commit; outside a
// transaction, right after the insert.
import type { Actor, RequestMeta } from '../audit/service';
import type { JobSystem } from './system';
import type { Scope } from '../platform/scope';
import type { JobRun } from './run-lifecycle-store';
import { eraseAddressInPayloads } from './payload-store';

type Deps = Scope<{ jobSystem: JobSystem; enqueued(run: JobRun): boolean }>;

export class JobOutbox {
  constructor(private readonly s: Deps) {}

  async enqueue(kind: string, payload: Record<string, unknown>, by: { actor: Actor; meta?: RequestMeta }, opts: { delayMs?: number } = {}): Promise<JobRun> {
    const run = await this.s.jobSystem.enqueue(this.s.db, kind, payload, by, opts);
    if (!this.s.enqueued(run)) await this.s.jobSystem.handOver([run]);
    return run;
  }

  /** Erasure: waiting runs addressed to `email` are cancelled, and no run's payload keeps the address. */
  async forgetAddress(email: string): Promise<number> {
    return eraseAddressInPayloads(this.s.db, email, this.s.now());
  }
}
