// timestamptz values are read by position (src/platform/timestamps.ts) instead of by pg's regular
// expressions: the Date must be the same instant, to the millisecond, for whatever PostgreSQL
// prints. PostgreSQL itself is the oracle: each value's text beside its epoch in milliseconds.
import pg from 'pg';
import { isoString, parseTimestamptz } from '../../src/platform/timestamps';
import { createDatabase } from '../../src/platform/database';
import { createLogger } from '../../src/logger';
import { adminUrl } from '../support/databases';

type Printed = { text: string; ms: string };

describe('timestamptz parsing', () => {
  const client = new pg.Client({ connectionString: adminUrl() });
  beforeAll(() => client.connect());
  afterAll(() => client.end());

  /** Each value as PostgreSQL prints it in `zone`, with its instant floored to the millisecond. */
  async function printed(zone: string, values: string): Promise<Printed[]> {
    await client.query(`set timezone = '${zone}'`);
    const { rows } = await client.query<Printed>(
      `select ts::text as text, floor(extract(epoch from ts) * 1000)::text as ms from (${values}) v(ts)`,
    );
    return rows;
  }

  const expectSameInstant = (rows: Printed[]) => {
    for (const { text, ms } of rows) {
      const parsed = parseTimestamptz(text);
      const got = parsed instanceof Date ? parsed.getTime() : parsed;
      expect({ text, ms: got }).toEqual({ text, ms: Number(ms) });
    }
  };

  const ZONES = ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Asia/Kathmandu', 'Europe/Amsterdam', 'Pacific/Kiritimati', 'America/Los_Angeles'];

  it('reads every fraction length, offset shape and era the same as PostgreSQL counts it', async () => {
    const edges = `values
      ('2026-11-26 23:55:21+00'::timestamptz), ('2026-11-26 23:55:21.1+00'), ('2026-11-26 23:55:21.12+00'),
      ('2026-11-26 23:55:21.123+00'), ('2026-11-26 23:55:21.1234+00'), ('2026-11-26 23:55:21.99999+00'),
      ('2026-11-26 23:55:21.999999+00'), ('1969-12-31 23:59:59.9995+00'), ('1970-01-01 00:00:00+00'),
      ('1900-06-01 12:00:00+00'), ('1000-01-01 00:00:00.5+00'), ('9999-12-31 23:59:59.999999+00'),
      ('0050-03-01 10:00:00+00'), ('0999-12-31 23:59:59+00'), ('0044-03-15 12:00:00+00 BC'),
      ('2024-02-29 12:00:00+00'), ('2038-01-19 03:14:08+00')`;
    for (const zone of ZONES) expectSameInstant(await printed(zone, edges));
  });

  it('reads 5,000 random instants (years 1000 to 9999, microseconds) in every zone', async () => {
    const random = `select timestamptz '1000-01-01 00:00:00+00' + random() * (timestamptz '9999-12-31 00:00:00+00' - timestamptz '1000-01-01 00:00:00+00') from generate_series(1, 5000)`;
    await client.query('select setseed(0.26)');
    for (const zone of ZONES) expectSameInstant(await printed(zone, random));
  });

  it('answers infinity as pg does: a number', async () => {
    expectSameInstant(await printed('UTC', `values ('infinity'::timestamptz), ('-infinity')`));
  });

  it('is what the service reads timestamptz columns with', async () => {
    const db = createDatabase(adminUrl(), 1, createLogger('silent'));
    try {
      const [row] = (await db.raw(`select timestamptz '2026-11-26 23:55:21.123456+05:30' as at`)).rows;
      expect(row.at).toEqual(new Date('2026-11-26T18:25:21.123Z'));
    } finally {
      await db.destroy();
    }
  });
});

describe('isoString', () => {
  const DAY = 86_400_000;
  const from = Date.UTC(1000, 0, 1) - 3 * DAY;
  const to = Date.UTC(10_000, 0, 1) + 3 * DAY;

  it('writes what toISOString writes, for 200,000 random instants and every edge of the years 1000–9999', () => {
    const instants = [from, Date.UTC(1000, 0, 1), Date.UTC(1000, 0, 1) - 1, Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(10_000, 0, 1), 0, -1, Date.UTC(2000, 1, 29), Date.UTC(2100, 1, 28, 23, 59, 59, 999), Date.UTC(2100, 2, 1)];
    for (let i = 0; i < 200_000; i++) instants.push(from + Math.floor(Math.random() * (to - from)));
    const differ = instants.map((ms) => new Date(ms)).filter((d) => isoString(d) !== d.toISOString());
    expect(differ.map((d) => d.toISOString())).toEqual([]);
  });

  it('throws on an invalid date as toISOString does', () => {
    expect(() => isoString(new Date(Number.NaN))).toThrow(RangeError);
  });
});
