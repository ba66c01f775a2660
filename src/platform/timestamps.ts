// Timestamps in and out, on the hot paths: parseTimestamptz reads PostgreSQL's text, isoString
// writes the contract's (RFC 3339, UTC, milliseconds).
//
// timestamptz values arrive as text, as PostgreSQL prints them with DateStyle ISO:
// '2026-11-26 23:55:21.123456+00'. pg's own parser (postgres-date) runs three regular expressions
// for each: on a 50-row list, with two timestamps a row, a tenth of the request's CPU. This one
// reads that usual shape by position and hands anything else (BC, a year outside 1000–9999,
// infinity, an unexpected shape) to pg's parser; both give the same Date (test/system/timestamps.test.ts).
import pg from 'pg';

// pg's own parser, taken when this module loads: database.ts imports it, then installs ours.
const parseDate = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ) as (text: string) => Date | number | null;

const DASH = 45;
const SPACE = 32;
const COLON = 58;
const DOT = 46;
const PLUS = 43;
const MS_PER_DIGIT = [100, 10, 1];
const OFFSET_UNITS = [60, 1]; // the offset's minutes and seconds, after its hours

/** The digits at [at, at + count) as a number, or -1 when one is not a digit. */
function digits(text: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const d = text.charCodeAt(i) - 48; // NaN past the end
    if (!(d >= 0 && d <= 9)) return -1;
    n = n * 10 + d;
  }
  return n;
}

export function parseTimestamptz(text: string): Date | number | null {
  const n = text.length;
  if (n < 22 || text.charCodeAt(4) !== DASH || text.charCodeAt(7) !== DASH || text.charCodeAt(10) !== SPACE || text.charCodeAt(13) !== COLON || text.charCodeAt(16) !== COLON) {
    return parseDate(text);
  }
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  if (year < 1000 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return parseDate(text);

  // Fractional seconds (1 to 6 digits): milliseconds truncated, as postgres-date's Date.UTC does.
  let i = 19;
  let ms = 0;
  if (text.charCodeAt(i) === DOT) {
    for (i++; i < n; i++) {
      const d = text.charCodeAt(i) - 48;
      if (d < 0 || d > 9) break;
      const place = i - 20; // 0: tenths, 1: hundredths, 2: thousandths; the rest is dropped
      if (place < 3) ms += d * MS_PER_DIGIT[place]!;
    }
  }

  // The offset: ±HH, ±HH:MM or ±HH:MM:SS (historical zones), and nothing after it.
  const sign = text.charCodeAt(i);
  if (sign !== PLUS && sign !== DASH) return parseDate(text);
  const offsetHours = digits(text, i + 1, 2);
  let offsetSeconds = offsetHours * 3600;
  i += 3;
  for (const unit of OFFSET_UNITS) {
    if (i === n) break;
    const part = text.charCodeAt(i) === COLON ? digits(text, i + 1, 2) : -1;
    if (part < 0) return parseDate(text);
    offsetSeconds += part * unit;
    i += 3;
  }
  if (offsetHours < 0 || i !== n) return parseDate(text);

  const utc = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  return new Date(sign === PLUS ? utc - offsetSeconds * 1000 : utc + offsetSeconds * 1000);
}

const PAD2 = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const PAD3 = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));
const DAY_MS = 86_400_000;
const FOUR_DIGIT_YEARS = { from: Date.UTC(1000, 0, 1), to: Date.UTC(10_000, 0, 1) - 1 };

/**
 * date.toISOString(), the same string, in a quarter of the time: a 50-row list writes 100 of them.
 * The civil date of a day count is Howard Hinnant's `civil_from_days`; a date outside the years
 * 1000–9999 (or an invalid one) is left to toISOString.
 */
export function isoString(date: Date): string {
  const ms = date.getTime();
  if (!(ms >= FOUR_DIGIT_YEARS.from && ms <= FOUR_DIGIT_YEARS.to)) return date.toISOString();
  const days = Math.floor(ms / DAY_MS);
  let rest = ms - days * DAY_MS;
  const hour = Math.floor(rest / 3_600_000);
  rest -= hour * 3_600_000;
  const minute = Math.floor(rest / 60_000);
  rest -= minute * 60_000;
  const second = Math.floor(rest / 1000);
  const milli = rest - second * 1000;

  const z = days + 719_468; // days since 0000-03-01
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153); // 0 = March
  const day = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1;
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  return `${year}-${PAD2[month]}-${PAD2[day]}T${PAD2[hour]}:${PAD2[minute]}:${PAD2[second]}.${PAD3[milli]}Z`;
}
