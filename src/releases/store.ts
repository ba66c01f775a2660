// releases and instances: the only file with SQL for them.
import { deleteInBatches } from '../platform/batches';
import type { Db } from '../platform/database';


export interface Release {
  id: string;
  version: string;
  commit: string;
  builtAt: Date | null;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

export interface InstanceRecord {
  id: string;
  hostname: string;
  pid: number;
  release: Release;
  startedAt: Date;
  lastHeartbeatAt: Date;
  stoppedAt: Date | null;
}

/** Where a newest-first page resumes: the sort key of the last item of the previous page. */
export interface PageKey {
  at: Date;
  id: string;
}

const RELEASE_COLUMNS = ['r.id', 'r.version', 'r.commit', 'r.built_at', 'r.first_seen_at', 'r.last_seen_at'];

/** A releases row as RELEASE_COLUMNS (or `releases.*`) selects it. */
interface ReleaseRecord {
  id: string;
  version: string;
  commit: string;
  built_at: Date | null;
  first_seen_at: Date;
  last_seen_at: Date;
}

function toRelease(row: ReleaseRecord): Release {
  return { id: row.id, version: row.version, commit: row.commit, builtAt: row.built_at, firstSeenAt: row.first_seen_at, lastSeenAt: row.last_seen_at };
}

/**
 * Upserts the release and inserts the instance in one statement, so a release never exists
 * without the instance that recorded it (retention deletes releases left without instances).
 * Idempotent: registering the same instance again (its first answer was lost, or its record was
 * deleted meanwhile) refreshes its record.
 */
export async function registerInstance(
  db: Db,
  release: { id: string; version: string; commit: string; builtAt: Date | null },
  instance: { id: string; hostname: string; pid: number; startedAt: Date },
  now: Date,
): Promise<Release> {
  const { rows } = await db.raw(
    `with r as (
       insert into releases (id, version, commit, built_at, first_seen_at, last_seen_at) values (?, ?, ?, ?, ?, ?)
       on conflict (version, commit) do update set last_seen_at = greatest(releases.last_seen_at, excluded.last_seen_at)
       returning *
     ), i as (
       insert into instances (id, hostname, pid, release_id, started_at, last_heartbeat_at)
       select ?::text, ?::text, ?::integer, r.id, ?::timestamptz, ?::timestamptz from r
       on conflict (id) do update set last_heartbeat_at = excluded.last_heartbeat_at, stopped_at = null
     )
     select * from r`,
    [release.id, release.version, release.commit, release.builtAt, now, now, instance.id, instance.hostname, instance.pid, instance.startedAt, now],
  );
  return toRelease(rows[0]);
}

/**
 * One round trip: the instance's heartbeat (and `stopped_at` when it stops) and its release's
 * `last_seen_at`. Null when the instance has no live record (deleted, or already stopped).
 */
export async function recordHeartbeat(db: Db, instanceId: string, now: Date, opts: { stopped: boolean }): Promise<Release | null> {
  const { rows } = await db.raw(
    `with i as (
       update instances set last_heartbeat_at = ?, stopped_at = ? where id = ? and stopped_at is null returning release_id
     )
     update releases set last_seen_at = greatest(releases.last_seen_at, ?) from i where releases.id = i.release_id
     returning releases.*`,
    [now, opts.stopped ? now : null, instanceId, now],
  );
  return rows[0] ? toRelease(rows[0]) : null;
}

export async function listReleases(db: Db, limit: number, after?: PageKey): Promise<Release[]> {
  const q = db('releases as r')
    .select(RELEASE_COLUMNS)
    .orderBy([
      { column: 'r.first_seen_at', order: 'desc' },
      { column: 'r.id', order: 'desc' },
    ])
    .limit(limit);
  if (after) q.whereRaw('(r.first_seen_at, r.id) < (?, ?)', [after.at, after.id]);
  return (await q).map(toRelease);
}

export async function listInstances(db: Db, limit: number, after?: PageKey): Promise<InstanceRecord[]> {
  const q = db('instances as i')
    .join('releases as r', 'r.id', 'i.release_id')
    .select('i.id as instance_id', 'i.hostname', 'i.pid', 'i.started_at', 'i.last_heartbeat_at', 'i.stopped_at', ...RELEASE_COLUMNS)
    .orderBy([
      { column: 'i.started_at', order: 'desc' },
      { column: 'i.id', order: 'desc' },
    ])
    .limit(limit);
  if (after) q.whereRaw('(i.started_at, i.id) < (?, ?)', [after.at, after.id]);
  type Joined = ReleaseRecord & { instance_id: string; hostname: string; pid: number; started_at: Date; last_heartbeat_at: Date; stopped_at: Date | null };
  return (await q).map((row: Joined) => ({
    id: row.instance_id,
    hostname: row.hostname,
    pid: row.pid,
    release: toRelease(row),
    startedAt: row.started_at,
    lastHeartbeatAt: row.last_heartbeat_at,
    stoppedAt: row.stopped_at,
  }));
}

/** Releases with instances not stopped whose heartbeat is at `since` or later, with their count; newest release first. */
export async function listRunningReleases(db: Db, since: Date): Promise<{ release: Release; instances: number }[]> {
  const rows = await db('instances as i')
    .join('releases as r', 'r.id', 'i.release_id')
    .whereNull('i.stopped_at')
    .where('i.last_heartbeat_at', '>=', since)
    .groupBy('r.id')
    .select(RELEASE_COLUMNS)
    .count<(ReleaseRecord & { instances: number })[]>('* as instances')
    .orderBy([
      { column: 'r.first_seen_at', order: 'desc' },
      { column: 'r.id', order: 'desc' },
    ]);
  return rows.map((row) => ({ release: toRelease(row), instances: Number(row.instances) }));
}

/** Instances stopped before `before`, or never stopped and silent since before it; how many. */
export function deleteInstancesBefore(db: Db, before: Date, batch: number): Promise<number> {
  return deleteInBatches(
    db,
    'instances',
    (q) => q.where((w) => w.where('stopped_at', '<', before).orWhere((silent) => silent.whereNull('stopped_at').where('last_heartbeat_at', '<', before))),
    batch,
  );
}

/**
 * Releases without instances, last seen before `before`, other than `keep`; how many. A release
 * seen since `before` is kept: an instance may just have recorded it.
 */
export function deleteReleasesWithoutInstances(db: Db, before: Date, keep: { version: string; commit: string }, batch: number): Promise<number> {
  return deleteInBatches(
    db,
    'releases',
    (q) =>
      q
        .where('last_seen_at', '<', before)
        .whereNot((k) => k.where({ version: keep.version, commit: keep.commit }))
        .whereNotExists((sub) => sub.select(db.raw('1')).from('instances').whereRaw('instances.release_id = releases.id')),
    batch,
  );
}
