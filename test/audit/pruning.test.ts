// AuditService.pruneBefore (what the retention job calls) and refreshRollups: events before the
// cut go in batches, the rollups of the time they covered stop counting, and stats over the cut
// equal plain counts of what is left, before and after the rollups are filled again.
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { newId } from '../../src/ids';

let t: TestApp;
let operator: string;

beforeAll(async () => {
  t = await startTestApp();
  operator = (await signedInUser(t.ctx, { operator: true })).auth;
});
afterAll(() => t?.close());

const HOUR_MS = 3600 * 1000;
const DAY_MS = 24 * HOUR_MS;
const dayStart = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;
const iso = (ms: number) => new Date(ms).toISOString();

/** Events every 37 minutes (three actions in turn) over [from, to). */
async function seed(from: number, to: number): Promise<void> {
  const rows = [];
  for (let at = from, i = 0; at < to; at += 37 * 60_000, i++) {
    rows.push({ id: newId('aud'), at: new Date(at), action: ['prune.a', 'prune.b', 'prune.c'][i % 3], actor_kind: 'system', data: {} });
  }
  for (let i = 0; i < rows.length; i += 1000) await t.ctx.db('audit_events').insert(rows.slice(i, i + 1000));
}

const count = async (from: number, to: number) => Number((await t.ctx.db('audit_events').where('at', '>=', new Date(from)).where('at', '<', new Date(to)).count('* as n'))[0]!.n);
const bucketCount = async () => Number((await t.ctx.db('audit_rollup_buckets').count('* as n'))[0]!.n);

type Stats = { total: number; by_day: { day: string; count: number }[]; by_action: { action: string; count: number }[] };
const stats = async (since: number, until: number): Promise<Stats> => (await t.http.get(`/ops/audit/stats?since=${iso(since)}&until=${iso(until)}`).set('Authorization', operator).expect(200)).body;

/** Stats over [since, until) against plain counts per day. */
async function expectPlainCounts(since: number, until: number) {
  const got = await stats(since, until);
  expect(got.total).toBe(await count(since, until));
  for (const { day, count: n } of got.by_day) {
    const start = Math.max(since, Date.parse(`${day}T00:00:00Z`));
    expect([day, n]).toEqual([day, await count(start, Math.min(until, Date.parse(`${day}T00:00:00Z`) + DAY_MS))]);
  }
  return got;
}

it('refreshRollups fills the closed hours and days once; pruneBefore deletes in batches and voids the rollups it cut into', async () => {
  const now = Date.now();
  const first = dayStart(now) - 6 * DAY_MS;
  await seed(first + 5 * 60_000, now - 2 * HOUR_MS);
  const total = await count(0, now);
  expect(total).toBeGreaterThan(150);

  // Every closed hour from the oldest event on, and every closed whole day, in one go; then nothing left to do.
  const filled = await t.ctx.services.audit.refreshRollups();
  expect(filled).toBe(await bucketCount());
  // Hours closed an hour after their end, from the first whole hour of events on; whole days within.
  const closedEnd = Math.floor((now - HOUR_MS) / HOUR_MS) * HOUR_MS;
  expect(filled).toBe((closedEnd - (first + HOUR_MS)) / HOUR_MS + (dayStart(closedEnd) - (first + DAY_MS)) / DAY_MS);
  expect(await t.ctx.services.audit.refreshRollups()).toBe(0);
  const since = first + 3 * 60_000 + 17; // a partial first day, cut inside its first hour
  await expectPlainCounts(since, now);
  expect(await bucketCount()).toBe(filled); // read from the rollups: nothing to fill

  // The cut: 2.5 days in, inside an hour. Small batches: several statements.
  const cut = first + 2 * DAY_MS + 12 * HOUR_MS + 20 * 60_000;
  const before = await count(0, cut);
  expect(await t.ctx.services.audit.pruneBefore(new Date(cut), 7)).toBe(before);
  expect(await count(0, cut)).toBe(0);
  expect(await count(0, now)).toBe(total - before);
  // No bucket that starts before the cut is left; those after it are kept.
  expect(Number((await t.ctx.db('audit_rollup_buckets').where('start', '<', new Date(cut)).count('* as n'))[0]!.n)).toBe(0);
  expect(Number((await t.ctx.db('audit_rollup_counts').where('start', '<', new Date(cut)).count('* as n'))[0]!.n)).toBe(0);
  expect(await bucketCount()).toBeGreaterThan(0);

  // Over the cut, stats equal what is left: the days before it 0, its day only its later part.
  const after = await expectPlainCounts(since, now);
  expect(after.total).toBe(total - before);
  expect(after.by_day.slice(0, 2).map((d) => d.count)).toEqual([0, 0]);
  // The stretch before the horizon is not rolled up again.
  expect(await t.ctx.services.audit.refreshRollups()).toBe(0);
  await expectPlainCounts(since, now);

  // The horizon only moves forward: an earlier cut deletes nothing and voids nothing more.
  const buckets = await bucketCount();
  expect(await t.ctx.services.audit.pruneBefore(new Date(first))).toBe(0);
  expect(await bucketCount()).toBe(buckets);
  await expectPlainCounts(since, now);
});
