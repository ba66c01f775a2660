// Audit events: written inside the caller's transaction (or in the statement of the change,
// auditedChange), so an event exists exactly when its change does.
import { newId } from '../ids';
import { runStatement, prepared, runPrepared, type Prepared } from '../platform/prepared';
import { deleteInBatches } from '../platform/batches';
import { instantText } from './instants';
import type { Range, WindowPlan } from './rollups';
import type { Db } from '../platform/database';

type ActorKind = 'user' | 'operator' | 'system' | 'provider';

export interface Actor {
  kind: ActorKind;
  id: string | null;
}

/** Who asked, from which request: carried from the HTTP edge into the domain. */
export interface RequestMeta {
  requestId: string | null;
  ip: string | null;
  userAgent: string | null;
}

export interface AuditEventInput {
  action: string;
  actor: Actor;
  target?: { kind: string; id: string } | null;
  orgId?: string | null;
  data?: Record<string, unknown>;
  meta?: RequestMeta;
}

const AUDIT_EVENT_INSERT = `insert into audit_events (id, action, actor_kind, actor_id, target_kind, target_id, org_id, ip, user_agent, request_id, data)
   values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`;
const INSERT_AUDIT_EVENT = prepared('audit_events.insert', AUDIT_EVENT_INSERT);

/** The event's row as AUDIT_EVENT_INSERT's parameters; the first is its new id (exported for bench:http's bare login). */
export function eventValues(event: AuditEventInput): unknown[] {
  return [
    newId('aud'),
    event.action,
    event.actor.kind,
    event.actor.id,
    event.target?.kind ?? null,
    event.target?.id ?? null,
    event.orgId ?? null,
    event.meta?.ip ?? null,
    event.meta?.userAgent?.slice(0, 512) ?? null,
    event.meta?.requestId ?? null,
    JSON.stringify(event.data ?? {}),
  ];
}

export function insertAuditEvent(trx: Db, event: AuditEventInput): Promise<string> {
  return insertAuditedChange(trx, INSERT_AUDIT_EVENT, [], event);
}

/**
 * A change and its audit event as ONE statement: `change` (an insert, update or delete with
 * placeholders $1…$changeParams) runs as a data-modifying WITH of the event's insert. A statement
 * is atomic by itself, so the event commits exactly when its change does without a transaction
 * (no BEGIN and COMMIT round trips) — for a hot change that is its request's only write.
 */
export function auditedChange(name: string, change: { sql: string; params: number }): Prepared {
  const insert = AUDIT_EVENT_INSERT.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + change.params}`);
  return prepared(name, `with change as (${change.sql})\n   ${insert}`);
}

/** Runs an `auditedChange` statement (or the event's insert alone): the change's parameters, then the event's. The event's id. */
export async function insertAuditedChange(db: Db, statement: Prepared, changeValues: unknown[], event: AuditEventInput): Promise<string> {
  const values = eventValues(event);
  await runPrepared(db, statement, [...changeValues, ...values]);
  return values[0] as string;
}

/** Clears ip and user agent of every event the user acted in (the actor id stays, a pseudonym). */
export async function eraseActorDetails(db: Db, userId: string): Promise<number> {
  return db('audit_events').where({ actor_id: userId }).where((q) => q.whereNotNull('ip').orWhereNotNull('user_agent')).update({ ip: null, user_agent: null });
}

/**
 * Event data that names an address keeps it under `to` or `email` (an operator's test mail, an
 * invitation's invitee): removed for the erased address, in any case. Only the actions known to
 * record one are scanned (action index); a new action that records an address belongs here.
 */
const ACTIONS_WITH_ADDRESS = ['ops.mail.test_sent', 'org.invitation.created', 'org.invitation.revoked'];

export async function eraseAddressInData(db: Db, email: string): Promise<number> {
  return db('audit_events')
    .whereIn('action', ACTIONS_WITH_ADDRESS)
    .where((q) => q.whereRaw("lower(data->>'to') = lower(?)", [email]).orWhereRaw("lower(data->>'email') = lower(?)", [email]))
    .update({ data: db.raw(`data - 'to' - 'email' || '{"erased": true}'::jsonb`) });
}

// ----- reading --------------------------------------------------------------------------------

export interface AuditEvent {
  id: string;
  at: Date;
  action: string;
  actor: Actor;
  target: { kind: string; id: string } | null;
  orgId: string | null;
  ip: string | null;
  userAgent: string | null;
  requestId: string | null;
  data: Record<string, unknown>;
}

/** An event with its `at` to the microsecond: the sort key of the list. */
export type ListedEvent = AuditEvent & { atUs: number };

/** `auth.login.succeeded`, or every action that starts with `auth.login.`. */
export type ActionFilter = { exact: string } | { prefix: string };

export interface EventFilter {
  action?: ActionFilter;
  actorId?: string;
  orgId?: string;
  targetId?: string;
  sinceUs?: number;
  untilUs?: number;
}

/** The last event of a page: the next page starts below it in (at desc, id desc). */
export interface EventKey {
  atUs: number;
  id: string;
}

const COLUMNS = 'id, at, action, actor_kind, actor_id, target_kind, target_id, org_id, ip, user_agent, request_id, data';
const AT_US = '(extract(epoch from at) * 1000000)::bigint as at_us';

/**
 * SQL conditions joined with `and`, with their values numbered as they are bound ($1, $2…).
 * Conditions of one statement share its `values`, so that their numbers do not collide.
 */
class Conditions {
  readonly parts: string[] = [];
  constructor(readonly values: unknown[] = []) {}
  /** `sql` with a `?` for each of `values`. */
  add(sql: string, ...values: unknown[]): this {
    let i = 0;
    this.parts.push(sql.replace(/\?/g, () => this.bind(values[i++])));
    return this;
  }
  /** The placeholder of one more value. */
  bind(value: unknown): string {
    return `$${this.values.push(value)}`;
  }
  get sql(): string {
    return this.parts.length ? this.parts.join(' and ') : 'true';
  }
}

/** A prefix as a range of the byte-wise ("C") order: ['auth.login.', 'auth.login/'). */
function prefixRange(prefix: string): [string, string] {
  return [prefix, prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)];
}

function whereAction(c: Conditions, action: ActionFilter | undefined): Conditions {
  if (!action) return c;
  return 'exact' in action ? c.add('action = ?', action.exact) : c.add('action >= ? and action < ?', ...prefixRange(action.prefix));
}

/**
 * Newest first, `limit` events below `after`. An action prefix alone walks the matching actions
 * (one index probe each) and merges the newest `limit` keys of each from the action index (index
 * only), then reads the page's rows: one range scan over the prefix would have to sort every
 * matching event, and the time index would read past every non-matching one. With another column
 * filter, that filter's index leads.
 */
export async function listEvents(db: Db, filter: EventFilter, after: EventKey | undefined, limit: number): Promise<ListedEvent[]> {
  const c = new Conditions();
  if (filter.actorId !== undefined) c.add('actor_id = ?', filter.actorId);
  if (filter.orgId !== undefined) c.add('org_id = ?', filter.orgId);
  if (filter.targetId !== undefined) c.add('target_id = ?', filter.targetId);
  if (filter.sinceUs !== undefined) c.add('at >= ?::timestamptz', instantText(filter.sinceUs));
  if (filter.untilUs !== undefined) c.add('at < ?::timestamptz', instantText(filter.untilUs));
  if (after) c.add('(at, id) < (?::timestamptz, ?)', instantText(after.atUs), after.id);
  const select = `select ${COLUMNS}, ${AT_US} from audit_events`;
  const action = filter.action;
  if (action && 'prefix' in action && filter.actorId === undefined && filter.orgId === undefined && filter.targetId === undefined) {
    const [from, to] = prefixRange(action.prefix);
    const [$from, $to, $limit] = [c.bind(from), c.bind(to), c.bind(limit)];
    const order = `order by at desc, id desc limit ${$limit}`;
    const rows = await runStatement<ListedRecord>(
      db,
      `with recursive actions(action) as (
         select min(action) from audit_events where action >= ${$from} and action < ${$to}
         union all
         select (select min(e.action) from audit_events e where e.action > a.action and e.action < ${$to}) from actions a where a.action is not null
       ), page as (
         select p.at, p.id from actions a cross join lateral (select at, id from audit_events where action = a.action and ${c.sql} ${order}) p
         order by p.at desc, p.id desc limit ${$limit}
       )
       ${select} where id in (select id from page) ${order}`,
      c.values,
      'audit.list_by_action_prefix',
    );
    return rows.map(toListed);
  }
  whereAction(c, action);
  const rows = await runStatement<ListedRecord>(db, `${select} where ${c.sql} order by at desc, id desc limit ${c.bind(limit)}`, c.values, 'audit.list');
  return rows.map(toListed);
}

export async function getEvent(db: Db, id: string): Promise<AuditEvent | null> {
  const { rows } = await db.raw(`select ${COLUMNS} from audit_events where id = ?`, [id]);
  return rows[0] ? toEvent(rows[0], null) : null;
}

/** An audit_events row as COLUMNS selects it. */
interface EventRecord {
  id: string;
  at: Date;
  action: string;
  actor_kind: ActorKind;
  actor_id: string | null;
  target_kind: string | null;
  target_id: string | null;
  org_id: string | null;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  data: Record<string, unknown>;
}

/**
 * One object per event, with `atUs` (the list's sort key; a single event, which needs none, gets
 * null): a page maps up to 200, and a second object spread from the first to add it cost as much
 * again, in time and in garbage.
 */
function toEvent<Us extends number | null>(row: EventRecord, atUs: Us): AuditEvent & { atUs: Us } {
  return {
    id: row.id,
    at: row.at,
    action: row.action,
    actor: { kind: row.actor_kind, id: row.actor_id },
    target: row.target_kind !== null && row.target_id !== null ? { kind: row.target_kind, id: row.target_id } : null,
    orgId: row.org_id,
    ip: row.ip,
    userAgent: row.user_agent,
    requestId: row.request_id,
    data: row.data,
    atUs,
  };
}

type ListedRecord = EventRecord & { at_us: string };

const toListed = (row: ListedRecord): ListedEvent => toEvent(row, Number(row.at_us));

// ----- counting (see rollups.ts) ---------------------------------------------------------------

const US = (column: string) => `(extract(epoch from ${column}) * 1000000)::bigint`;

/** The database's clock (it stamps `at`) and the retention horizon, if any. */
export async function rollupState(db: Db): Promise<{ nowUs: number; prunedBeforeUs: number | null }> {
  const { rows } = await db.raw(`select ${US('now()')} as now_us, (select ${US('pruned_before')} from audit_rollup_horizon) as pruned_us`);
  return { nowUs: Number(rows[0].now_us), prunedBeforeUs: rows[0].pruned_us === null ? null : Number(rows[0].pruned_us) };
}

export async function oldestEventUs(db: Db): Promise<number | null> {
  const { rows } = await db.raw(`select ${US('min(at)')} as us from audit_events`);
  return rows[0].us === null ? null : Number(rows[0].us);
}

/** `column` in any of `ranges`. */
function inRanges(c: Conditions, column: string, ranges: Range[]): Conditions {
  return c.add(`(${ranges.map(() => `${column} >= ?::timestamptz and ${column} < ?::timestamptz`).join(' or ')})`, ...ranges.flat().map(instantText));
}

export interface WindowCounts {
  /** Per UTC day (YYYY-MM-DD), days without events left out. */
  byDay: Map<string, number>;
  byAction: Map<string, number>;
  /** How many of the buckets the plan reads are filled. */
  filled: number;
}

/** One statement (one snapshot): the plan's buckets, its live stretches, and how many of the buckets exist. */
export async function countWindow(db: Db, plan: WindowPlan, action: ActionFilter | undefined): Promise<WindowCounts> {
  const read: [Span, Range[]][] = [];
  if (plan.days) read.push(['day', [plan.days]]);
  if (plan.hours.length) read.push(['hour', plan.hours]);
  const values: unknown[] = [];
  const spanIn = (span: Span, ranges: Range[]) => inRanges(new Conditions(values).add('span = ?', span), 'start', ranges);
  const sources = read.map(([span, ranges]) => whereAction(spanIn(span, ranges), action));
  const sql = sources.map((c) => `select (start at time zone 'UTC')::date as day, action, count as n from audit_rollup_counts where ${c.sql}`);
  if (plan.live.length) {
    const c = whereAction(inRanges(new Conditions(values), 'at', plan.live), action);
    sql.push(`select (at at time zone 'UTC')::date as day, action, count(*) as n from audit_events where ${c.sql} group by 1, 2`);
  }
  const filled = read.map(([span, ranges]) => spanIn(span, ranges));
  const rows = await runStatement<{ day: string | null; action: string | null; n: string }>(
    db,
    `select to_char(day, 'YYYY-MM-DD') as day, action, sum(n)::bigint as n from (${sql.join(' union all ')}) c group by grouping sets ((day), (action))
     union all
     select null, null, (select count(*) from audit_rollup_buckets where ${filled.map((c) => `(${c.sql})`).join(' or ') || 'false'})`,
    values,
    'audit.count_window',
  );
  const counts: WindowCounts = { byDay: new Map(), byAction: new Map(), filled: 0 };
  for (const row of rows) {
    const n = Number(row.n);
    if (row.day !== null) counts.byDay.set(row.day, n);
    else if (row.action !== null) counts.byAction.set(row.action, n);
    else counts.filled = n;
  }
  return counts;
}

export type Span = 'hour' | 'day';
const SPAN_INTERVAL: Record<Span, string> = { hour: '1 hour', day: '24 hours' };

/** Starts of the `span` buckets in `range` not filled yet, oldest first. */
export async function missingBuckets(db: Db, span: Span, [from, to]: Range): Promise<number[]> {
  const { rows } = await db.raw(
    `select ${US('g')} as us from generate_series(?::timestamptz, ?::timestamptz - interval '${SPAN_INTERVAL[span]}', interval '${SPAN_INTERVAL[span]}') g
     where not exists (select 1 from audit_rollup_buckets b where b.span = ? and b.start = g) order by g`,
    [instantText(from), instantText(to), span],
  );
  return rows.map((r: { us: number }) => Number(r.us));
}

/**
 * Fills the `span` buckets in `range` that are not filled yet: hours counted from audit_events
 * (one index range scan each), days summed from their hours (filled first). A bucket another
 * request fills meanwhile is left to it (its insert waits for that one's commit, then skips).
 * Answers how many buckets it filled.
 */
export async function fillBuckets(db: Db, span: Span, [from, to]: Range): Promise<number> {
  const counted =
    span === 'hour'
      ? `select m.start, e.action, e.n from made m
         cross join lateral (select action, count(*) as n from audit_events where at >= m.start and at < m.start + interval '1 hour' group by action) e`
      : `select m.start, h.action, sum(h.count) from made m
         join audit_rollup_counts h on h.span = 'hour' and h.start >= m.start and h.start < m.start + interval '24 hours' group by m.start, h.action`;
  // The planner cannot know how many buckets are missing nor how many events an hour holds: its
  // estimate passes jit_above_cost, and compiling the plan (hundreds of ms) would cost more than
  // running it.
  return db.transaction(async (trx) => {
    await trx.raw('set local jit = off');
    const { rows } = await trx.raw(
      `with made as (
         insert into audit_rollup_buckets (span, start)
         select ?, g from generate_series(?::timestamptz, ?::timestamptz - interval '${SPAN_INTERVAL[span]}', interval '${SPAN_INTERVAL[span]}') g
         on conflict do nothing
         returning start
       ), counted as (
         insert into audit_rollup_counts (span, start, action, count) select ?, c.* from (${counted}) c
       )
       select count(*)::int as n from made`,
      [span, instantText(from), instantText(to), span],
    );
    return rows[0].n as number;
  });
}

// ----- retention ------------------------------------------------------------------------------

/** Buckets that start before `before` are void from now on (the horizon only moves forward). */
export async function raiseHorizon(db: Db, before: Date): Promise<void> {
  await db.raw(
    `insert into audit_rollup_horizon (pruned_before) values (?)
     on conflict (singleton) do update set pruned_before = greatest(audit_rollup_horizon.pruned_before, excluded.pruned_before)`,
    [before],
  );
}

export function deleteEventsBefore(db: Db, before: Date, batch: number): Promise<number> {
  return deleteInBatches(db, 'audit_events', (q) => q.where('at', '<', before), batch);
}

/** Deletes the void buckets and their counts. */
export async function dropVoidBuckets(db: Db): Promise<void> {
  await db.raw(`
    with horizon as (select pruned_before from audit_rollup_horizon),
    buckets as (delete from audit_rollup_buckets where start < (select pruned_before from horizon))
    delete from audit_rollup_counts where start < (select pruned_before from horizon)`);
}
