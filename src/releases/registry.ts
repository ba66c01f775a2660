// This process as an instance of a release: known from the moment it starts (id, host, pid), recorded
// in the database once it is reachable, kept alive by a heartbeat, and marked stopped on a clean
// shutdown. Timestamps come from the app's clock, like every other record, so tests move time
// instead of waiting; the 60-second window tolerates the clock skew of hosts kept by NTP.
import os from 'node:os';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Db } from '../platform/database';
import { newId } from '../ids';
import * as store from './store';
import type { Release } from './store';

/** How often an instance records its heartbeat. */
const HEARTBEAT_MS = 15_000;
/** An instance runs while not stopped and its last heartbeat is at most this old (three missed heartbeats of slack). */
export const RUNNING_WINDOW_MS = 60_000;

export interface InstanceIdentity {
  id: string;
  hostname: string;
  pid: number;
  startedAt: Date;
}

export interface InstanceRegistryOptions {
  build: Config['build'];
  /** Read at each use: a test may swap the pool. */
  db: () => Db;
  logger: Logger;
  now: () => Date;
  heartbeatMs?: number;
}

export class InstanceRegistry {
  readonly identity: InstanceIdentity;
  /** The id the release gets if this instance is the first to record it; shown until then. */
  private readonly provisionalReleaseId = newId('rel');
  private readonly builtAt: Date | null;
  private recorded: Release | null = null;
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private failures = 0;
  private stopped = false;

  constructor(private readonly opts: InstanceRegistryOptions) {
    this.identity = { id: newId('ins'), hostname: os.hostname(), pid: process.pid, startedAt: opts.now() };
    // BUILD_TIME is free text: one the database would refuse must not keep the instance unrecorded.
    const builtAt = opts.build.builtAt ? new Date(opts.build.builtAt) : null;
    this.builtAt = builtAt && !Number.isNaN(builtAt.getTime()) ? builtAt : null;
  }

  /** Whether the database has recorded this instance (false until it was first reachable). */
  get registered(): boolean {
    return this.recorded !== null;
  }

  /**
   * This instance's release as the database recorded it at the latest heartbeat; until it is
   * recorded, as the build describes it (seen from this instance's start until now).
   */
  release(): Release {
    return (
      this.recorded ?? {
        id: this.provisionalReleaseId,
        version: this.opts.build.version,
        commit: this.opts.build.commit,
        builtAt: this.builtAt,
        firstSeenAt: this.identity.startedAt,
        lastSeenAt: this.opts.now(),
      }
    );
  }

  /**
   * Records the release and this instance now (once the database is ready), then heartbeats every
   * `heartbeatMs`. Never throws: what fails is logged and tried again at the next heartbeat.
   */
  async start(): Promise<void> {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => void this.beat(), this.opts.heartbeatMs ?? HEARTBEAT_MS);
    this.timer.unref(); // the heartbeat alone never keeps the process alive
    await this.beat();
  }

  /** One heartbeat, registering first when not recorded yet; joins the one in flight rather than stacking. */
  beat(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.inFlight ??= this.record().finally(() => (this.inFlight = null));
    return this.inFlight;
  }

  /** On a clean shutdown, before the pools close: no more heartbeats, and `stopped_at` recorded. Never throws. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.inFlight;
    if (!this.recorded) return;
    try {
      await store.recordHeartbeat(this.opts.db(), this.identity.id, this.opts.now(), { stopped: true });
    } catch (err) {
      this.opts.logger.error('could not record this instance as stopped; it shows as not running once its last heartbeat is a minute old', {
        instance_id: this.identity.id,
        error: message(err),
      });
    }
  }

  private async record(): Promise<void> {
    const now = this.opts.now();
    try {
      const db = this.opts.db();
      const wasRecorded = this.recorded !== null;
      // A record deleted meanwhile (retention after a long outage, a restored database) is made again.
      this.recorded =
        (wasRecorded ? await store.recordHeartbeat(db, this.identity.id, now, { stopped: false }) : null) ??
        (await store.registerInstance(db, { id: this.provisionalReleaseId, version: this.opts.build.version, commit: this.opts.build.commit, builtAt: this.builtAt }, this.identity, now));
      if (!wasRecorded) {
        this.opts.logger.info('instance recorded', { instance_id: this.identity.id, release_id: this.recorded.id, version: this.recorded.version, commit: this.recorded.commit });
      }
      if (this.failures) {
        this.opts.logger.info('instance heartbeat recorded again', { instance_id: this.identity.id, failed_heartbeats: this.failures });
        this.failures = 0;
      }
    } catch (err) {
      // One line per streak of failures: a long outage would otherwise log a line every heartbeat.
      if (this.failures++ === 0) {
        this.opts.logger.error('could not record this instance or its heartbeat; trying again at every heartbeat', {
          instance_id: this.identity.id,
          error: message(err),
        });
      }
    }
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
