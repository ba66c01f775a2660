// Releases and instances as operators see them, and the retention of instance records. What
// this process records about itself is in registry.ts.
import { DEFAULT_LIMIT, decodeCursor, page, type PageRequest } from '../pagination';
import type { Scope } from '../platform/scope';
import { RUNNING_WINDOW_MS } from './registry';
import * as store from './store';

export type { Release } from './store';

export interface Instance extends store.InstanceRecord {
  running: boolean;
}

/** Instance records (and releases) are deleted this many at a time (short statements, short locks). */
const PRUNE_BATCH = 1_000;


/** Cursor `{at, id}`: the sort key of the last item, `id` with the list's prefix. */
function pageKey(cursor: string | undefined, prefix: 'rel' | 'ins'): store.PageKey | undefined {
  const pattern = new RegExp(`^${prefix}_[0-9a-z]{26}$`);
  const key = decodeCursor(cursor, (k): k is { at: string; id: string } => typeof k?.at === 'string' && !Number.isNaN(Date.parse(k.at)) && typeof k?.id === 'string' && pattern.test(k.id));
  return key && { at: new Date(key.at), id: key.id };
}

type Deps = Scope;

export class ReleaseService {
  constructor(private readonly s: Deps) {}

  /** Every release that has run, newest first (by first seen), a page at a time. */
  async list(opts: PageRequest) {
    const limit = opts.limit ?? DEFAULT_LIMIT;
    const rows = await store.listReleases(this.s.db, limit + 1, pageKey(opts.cursor, 'rel'));
    return page(rows, limit, (last) => ({ at: last.firstSeenAt.toISOString(), id: last.id }));
  }

  /** The releases at least one instance runs now, with how many, newest first. */
  listRunning() {
    return store.listRunningReleases(this.s.db, new Date(this.s.now().getTime() - RUNNING_WINDOW_MS));
  }

  /** Instance starts, newest first, a page at a time; `running` by the heartbeat window. */
  async listInstances(opts: PageRequest) {
    const limit = opts.limit ?? DEFAULT_LIMIT;
    const rows = await store.listInstances(this.s.db, limit + 1, pageKey(opts.cursor, 'ins'));
    const since = this.s.now().getTime() - RUNNING_WINDOW_MS;
    const { items, nextCursor } = page(rows, limit, (last) => ({ at: last.startedAt.toISOString(), id: last.id }));
    return { items: items.map((i): Instance => ({ ...i, running: i.stoppedAt === null && i.lastHeartbeatAt.getTime() >= since })), nextCursor };
  }

  /**
   * Retention: deletes the instances stopped before `before`, or silent since before it (crashed),
   * then the releases left without instances and not seen since, except the one this process
   * runs. Answers how many instance records it deleted.
   */
  async pruneInstances(before: Date): Promise<number> {
    const deleted = await store.deleteInstancesBefore(this.s.db, before, PRUNE_BATCH);
    await store.deleteReleasesWithoutInstances(this.s.db, before, this.s.config.build, PRUNE_BATCH);
    return deleted;
  }
}
