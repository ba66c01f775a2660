// Audit events as other domains write them: on the services' database handle, so inside a
// transaction the event commits exactly when the change it describes does. Operators read them
// (list, one event, counts over a window); retention deletes them (pruneBefore).
import { commonErrors, invalidField } from '../errors';
import type { Scope } from '../platform/scope';
import type { Metrics } from '../platform/metrics';
import { DEFAULT_LIMIT, decodeCursor, page, type PageRequest } from '../pagination';
import { DAY_US, HOUR_US, instantDate, isInstant, microsOf, parseInstant } from './instants';
import { planWindow, runs, type Range, type WindowPlan } from './rollups';
import * as store from './store';
import type { Prepared } from '../platform/prepared';

export type { Actor, AuditEvent, AuditEventInput, RequestMeta } from './store';
export { auditedChange } from './store';

/** A signed-in user (or, with null, an unknown one) as the actor of an event. */
export const userActor = (id: string | null): store.Actor => ({ kind: 'user', id });

/** The filters of GET /ops/audit as the request gives them. */
export interface EventQuery {
  /** Exact, or a prefix when it ends with `*`. */
  action?: string;
  actorId?: string;
  orgId?: string;
  targetId?: string;
  since?: string;
  until?: string;
}

export interface AuditStats {
  since: Date;
  until: Date;
  total: number;
  /** Largest first, then by action. */
  byAction: { action: string; count: number }[];
  /** Every UTC day the window touches, oldest first. */
  byDay: { day: string; count: number }[];
}

const STATS_DEFAULT_US = 7 * DAY_US;
const STATS_MAX_US = 366 * DAY_US;
/** Buckets filled per statement: a statement stays far below the statement timeout. */
const FILL_CHUNK = { hour: 24, day: 31 };

type Deps = Scope<{ metrics: Pick<Metrics, 'signIns'> }>;

/** The outcome of a sign-in attempt each `auth.login.*` event records, for the sign-in metric. */
const SIGN_IN_OUTCOMES: Record<string, string> = {
  'auth.login.succeeded': 'succeeded',
  'auth.login.failed': 'failed',
  'auth.login.mfa_required': 'second_factor_required',
};

export class AuditService {
  constructor(private readonly s: Deps) {}

  record(event: store.AuditEventInput): Promise<string> {
    this.count(event);
    return store.insertAuditEvent(this.s.db, event);
  }

  /**
   * Runs a change built with `auditedChange` (its parameters first) and records its event in the
   * same statement: no transaction needed for the pair.
   */
  recordWith(change: Prepared, changeValues: unknown[], event: store.AuditEventInput): Promise<string> {
    this.count(event);
    return store.insertAuditedChange(this.s.db, change, changeValues, event);
  }

  private count(event: store.AuditEventInput): void {
    // Sign-ins are counted where every method records its outcome (a registration's first session is not one).
    const outcome = SIGN_IN_OUTCOMES[event.action];
    if (outcome && event.data?.via !== 'register') this.s.metrics.signIns.labels(String(event.data?.method ?? 'unknown'), outcome).inc();
  }

  /**
   * A deleted account's personal data in audit events: its own events keep only the pseudonymous
   * actor id (ip and user agent cleared), and addresses recorded in event data are removed.
   */
  async erasePersonalData(userId: string, email: string): Promise<void> {
    await store.eraseActorDetails(this.s.db, userId);
    await store.eraseAddressInData(this.s.db, email);
  }

  /** Newest first, a page at a time; the cursor holds the last event's `at` to the microsecond and its id. */
  async list(query: EventQuery, opts: PageRequest) {
    const limit = opts.limit ?? DEFAULT_LIMIT;
    const key = decodeCursor(opts.cursor, (k): k is { at: number; id: string } => isInstant(k?.at) && typeof k?.id === 'string');
    const sinceUs = instant(query.since, 'since');
    const untilUs = instant(query.until, 'until');
    if (sinceUs !== undefined && untilUs !== undefined && sinceUs >= untilUs) throw invalidField('query.until', 'must be after since');
    const filter: store.EventFilter = { action: actionFilter(query.action), actorId: query.actorId, orgId: query.orgId, targetId: query.targetId, sinceUs, untilUs };
    const rows = await store.listEvents(this.s.db, filter, key && { atUs: key.at, id: key.id }, limit + 1);
    return page(rows, limit, (last) => ({ at: last.atUs, id: last.id }));
  }

  async get(id: string): Promise<store.AuditEvent> {
    const event = await store.getEvent(this.s.db, id);
    if (!event) throw commonErrors.notFound(`No audit event ${id}.`);
    return event;
  }

  /**
   * Counts in [since, until): `until` defaults to now, `since` to 7 days before it; at most 366
   * days. Closed hours and days come from rollups, filled here when missing (see rollups.ts).
   */
  async stats(query: { since?: string; until?: string; action?: string }): Promise<AuditStats> {
    const untilUs = instant(query.until, 'until') ?? microsOf(this.s.now());
    const sinceUs = instant(query.since, 'since') ?? untilUs - STATS_DEFAULT_US;
    if (sinceUs >= untilUs) throw invalidField('query.since', 'must be before until');
    if (untilUs - sinceUs > STATS_MAX_US) throw invalidField('query.since', 'must be at most 366 days before until');
    const counts = await this.countWindow(sinceUs, untilUs, actionFilter(query.action));
    const byDay: AuditStats['byDay'] = [];
    for (let day = Math.floor(sinceUs / DAY_US) * DAY_US; day < untilUs; day += DAY_US) {
      const name = instantDate(day).toISOString().slice(0, 10);
      byDay.push({ day: name, count: counts.byDay.get(name) ?? 0 });
    }
    const byAction = [...counts.byAction].map(([name, count]) => ({ action: name, count }));
    byAction.sort((a, b) => b.count - a.count || (a.action < b.action ? -1 : 1));
    return { since: instantDate(sinceUs), until: instantDate(untilUs), total: byAction.reduce((n, a) => n + a.count, 0), byAction, byDay };
  }

  /**
   * Counts the closed hours and days of the longest window stats allow (the last 366 days, from
   * the oldest event or the retention horizon on) into the rollups, so that no stats request has
   * to: for the daily retention job. Answers how many buckets it filled.
   */
  async refreshRollups(): Promise<number> {
    const oldest = await store.oldestEventUs(this.s.db);
    if (oldest === null) return 0;
    const { nowUs, prunedBeforeUs } = await store.rollupState(this.s.db);
    return this.fill(planWindow(Math.max(oldest, nowUs - STATS_MAX_US), nowUs, nowUs, prunedBeforeUs));
  }

  /**
   * Deletes the events before `before`, `batch` at a time (short statements, short locks), and
   * voids the rollups of the time it deleted from; answers how many events it deleted. The
   * horizon moves first, so a stats request meanwhile counts that stretch from the events.
   */
  async pruneBefore(before: Date, batch = 5000): Promise<number> {
    await store.raiseHorizon(this.s.db, before);
    const deleted = await store.deleteEventsBefore(this.s.db, before, batch);
    await store.dropVoidBuckets(this.s.db);
    return deleted;
  }

  /**
   * Counts from complete rollups only: when buckets are missing, fills them and counts again. A
   * bucket can go missing after the fill only if retention voided it meanwhile; the next attempt
   * plans with the new horizon.
   */
  private async countWindow(sinceUs: number, untilUs: number, action: store.ActionFilter | undefined): Promise<store.WindowCounts> {
    for (let attempt = 1; ; attempt++) {
      const { nowUs, prunedBeforeUs } = await store.rollupState(this.s.db);
      const plan = planWindow(sinceUs, untilUs, nowUs, prunedBeforeUs);
      const counts = await store.countWindow(this.s.db, plan, action);
      if (counts.filled === plan.buckets) return counts;
      if (attempt === 3) throw new Error(`audit stats: ${plan.buckets - counts.filled} rollup buckets still missing after filling twice`);
      await this.fill(plan);
    }
  }

  /** Fills the plan's missing hours, then its missing days (summed from the hours). */
  private async fill(plan: WindowPlan): Promise<number> {
    if (!plan.closed) return 0;
    let filled = 0;
    const spans: ['hour' | 'day', Range | null, number][] = [
      ['hour', plan.closed, HOUR_US],
      ['day', plan.days, DAY_US],
    ];
    for (const [span, range, step] of spans) {
      if (!range) continue;
      const missing = await store.missingBuckets(this.s.db, span, range);
      for (const run of runs(missing, step, FILL_CHUNK[span])) filled += await store.fillBuckets(this.s.db, span, run);
    }
    return filled;
  }
}

/** A query time in microseconds; 422 naming it when JavaScript cannot read it (e.g. a leap second) or it is outside 1970–2255. */
function instant(text: string | undefined, name: string): number | undefined {
  if (text === undefined) return undefined;
  const us = parseInstant(text);
  if (us === null) throw invalidField(`query.${name}`, 'must be a valid time between 1970 and 2255');
  return us;
}

function actionFilter(action: string | undefined): store.ActionFilter | undefined {
  if (action === undefined) return undefined;
  return action.endsWith('*') ? { prefix: action.slice(0, -1) } : { exact: action };
}
