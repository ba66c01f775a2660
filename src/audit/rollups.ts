// How a stats window is counted. Closed hours and UTC days are counted once into rollup buckets
// (audit_rollup_buckets/counts) and read from there; only the rest is counted from audit_events
// with an index range scan: the edges finer than an hour, the hours not closed yet, and whatever
// lies before the retention horizon. For a 30-day window ending now that is under three hours of
// events instead of thirty days.
//
// An hour is closed an hour after it ends: `at` is the transaction's start, so an event can commit
// into an hour that has just ended, but no transaction of the service stays open for an hour.
// Nothing about a closed bucket changes afterwards except retention, which first raises the
// horizon (buckets that start before it are void and no longer read) and then deletes events.
import { ceilTo, DAY_US, floorTo, HOUR_US } from './instants';

/** A half-open stretch of time [from, to), in microseconds. */
export type Range = [from: number, to: number];

const LATE_COMMITS_US = HOUR_US;

export interface WindowPlan {
  /** Counted from audit_events. */
  live: Range[];
  /** Whole closed hours outside the whole days: read from hour buckets. */
  hours: Range[];
  /** Whole closed UTC days: read from day buckets (sums of their hours). */
  days: Range | null;
  /** Every closed hour of the window (hours and days together): what must be filled before reading. */
  closed: Range | null;
  /** How many buckets the read uses: fewer filled means fill first. */
  buckets: number;
}

export function planWindow(sinceUs: number, untilUs: number, nowUs: number, prunedBeforeUs: number | null): WindowPlan {
  const first = ceilTo(Math.max(sinceUs, prunedBeforeUs ?? sinceUs), HOUR_US);
  const end = Math.min(floorTo(untilUs, HOUR_US), floorTo(nowUs - LATE_COMMITS_US, HOUR_US));
  if (first >= end) return { live: [[sinceUs, untilUs]], hours: [], days: null, closed: null, buckets: 0 };
  const dayFrom = ceilTo(first, DAY_US);
  const dayTo = floorTo(end, DAY_US);
  const days: Range | null = dayFrom < dayTo ? [dayFrom, dayTo] : null;
  const hours = nonEmpty(days ? [[first, dayFrom], [dayTo, end]] : [[first, end]]);
  const buckets = (days ? (days[1] - days[0]) / DAY_US : 0) + hours.reduce((n, [from, to]) => n + (to - from) / HOUR_US, 0);
  return { live: nonEmpty([[sinceUs, first], [end, untilUs]]), hours, days, closed: [first, end], buckets };
}

/** The starts of `missing` buckets (sorted, `step` apart when consecutive) as runs of at most `max` consecutive buckets. */
export function runs(missing: number[], step: number, max: number): Range[] {
  const out: Range[] = [];
  for (const start of missing) {
    const last = out[out.length - 1];
    if (last && last[1] === start && last[1] - last[0] < max * step) last[1] = start + step;
    else out.push([start, start + step]);
  }
  return out;
}

const nonEmpty = (ranges: Range[]) => ranges.filter(([from, to]) => from < to);
