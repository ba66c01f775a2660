// Idempotency keys (README "Safe retries"): a keyed request runs its operation in one transaction
// whose first statement takes the key's lock and reads its recorded answer, and whose last records
// the answer beside the change. So the change and its record commit together or not at all, a
// retry gets the recorded answer instead of a second change, and a crash leaves no lock behind
// (the lock is the transaction's). The HTTP side (reading the header, writing the answer) is
// src/http/idempotent-call.ts.
import type { Scope } from '../platform/scope';
import type { RuntimeSettings } from '../settings/runtime';
import { durationMs } from '../config/settings-catalog';
import { idempotencyErrors } from './errors';
import * as store from './store';

/** A keyed request: whose key, the key, and the fingerprint of what it asked (key.ts). */
export interface KeyedRequest {
  userId: string;
  key: string;
  fingerprint: Buffer;
}

/** How long a client should wait before asking again while the first request is running. */
const IN_USE_RETRY_AFTER_SECONDS = 1;

/** Expired keys are deleted this many at a time. */
const PRUNE_BATCH = 1_000;

type Deps = Scope<{ runtimeSettings: RuntimeSettings }>;

export class IdempotencyService {
  constructor(private readonly s: Deps) {}

  /**
   * The keyed transaction's first statement: null when the request may run (the key is now held
   * until the transaction ends), else the recorded answer to replay. 409 `idempotency_key_in_use`
   * while another request holds the key; 422 `idempotency_key_reused` when the recorded answer
   * was for a different request.
   */
  async claim(request: KeyedRequest): Promise<store.StoredAnswer | null> {
    if (!this.s.inTransaction) throw new Error('an idempotency key is claimed inside the transaction of its request: the lock ends with it');
    const { locked, stored } = await store.claim(this.s.db, request.userId, request.key, this.s.now());
    if (!locked) throw inUse();
    return stored && sameRequest(stored, request);
  }

  /**
   * The keyed transaction's last statement: records the answer for replays. False when a live
   * answer of the key is recorded already (a request that committed between the snapshot of
   * `claim` and its lock): the caller must roll back and replay `recorded`.
   */
  record(request: KeyedRequest, answer: store.StoredAnswer): Promise<boolean> {
    const now = this.s.now();
    const expiresAt = new Date(now.getTime() + durationMs(this.s.runtimeSettings.get('retention.idempotency_keys')));
    return store.record(this.s.db, { ...request, answer, now, expiresAt });
  }

  /** The answer recorded for the key after `record` answered false (422 when for a different request). */
  async recorded(request: KeyedRequest): Promise<store.StoredAnswer> {
    const stored = await store.find(this.s.db, request.userId, request.key, this.s.now());
    // Gone since (its user deleted it with their account, or it expired): nothing to replay, and
    // the key is free again; the client's retry will run it.
    if (!stored) throw inUse();
    return sameRequest(stored, request);
  }

  /** Retention: deletes the keys expired at `now`; how many. */
  pruneExpired(now: Date): Promise<number> {
    return store.deleteExpired(this.s.db, now, PRUNE_BATCH);
  }
}

function inUse() {
  return idempotencyErrors.inUse(undefined, { headers: { 'Retry-After': String(IN_USE_RETRY_AFTER_SECONDS) } });
}

function sameRequest(stored: store.StoredKey, request: KeyedRequest): store.StoredAnswer {
  if (!stored.fingerprint.equals(request.fingerprint)) {
    throw idempotencyErrors.reused(undefined, { errors: [{ location: 'header.Idempotency-Key', message: 'was used with a different request (operation, path, query or body)' }] });
  }
  return { status: stored.status, headers: stored.headers, body: stored.body };
}
