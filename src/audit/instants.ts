// Instants as integer microseconds since the epoch: PostgreSQL stores `at` to the microsecond and
// a JavaScript Date keeps milliseconds, so a cursor or window bound through a Date could fall
// between two events of the same millisecond and skip or repeat one. Integers up to 2^53 hold any
// microsecond from 1970 to 2255 exactly.

export const HOUR_US = 3_600_000_000;
export const DAY_US = 24 * HOUR_US;

/** From 1970 to 2255. */
export const isInstant = (us: unknown): us is number => Number.isSafeInteger(us) && (us as number) >= 0;

/** An RFC 3339 date-time in microseconds (digits finer than that dropped); null when JavaScript cannot read it (a leap second) or it is outside isInstant. */
export function parseInstant(text: string): number | null {
  const ms = Date.parse(text); // keeps the first three fraction digits, drops the rest
  const fraction = /\.(\d+)/.exec(text)?.[1] ?? '';
  const us = ms * 1000 + Number(fraction.slice(3, 6).padEnd(3, '0'));
  return isInstant(us) ? us : null;
}

/** The instant as PostgreSQL reads it back exactly: `2026-11-22T02:12:29.123456Z`. */
export function instantText(us: number): string {
  const ms = Math.floor(us / 1000);
  return new Date(ms).toISOString().replace('Z', `${String(us - ms * 1000).padStart(3, '0')}Z`);
}

/** To the millisecond, for API timestamps (as every other operation answers them). */
export const instantDate = (us: number) => new Date(Math.floor(us / 1000));

export const microsOf = (date: Date) => date.getTime() * 1000;

export const floorTo = (us: number, unit: number) => Math.floor(us / unit) * unit;
export const ceilTo = (us: number, unit: number) => Math.ceil(us / unit) * unit;
