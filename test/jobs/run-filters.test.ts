// GET /ops/jobs/runs with several values per filter, as operators combine them:
// `state=retryable,discarded` (the contract's form: style form, explode false) and repeated
// parameters (`state=retryable&state=discarded`) give the same list, newest first.
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import * as store from '../../src/jobs/run-lifecycle-store';

let t: TestApp;
let auth: string;
/** Runs of this file's own kinds and queues, never handed over (no worker touches them). */
const ids: Record<string, number> = {};

beforeAll(async () => {
  t = await startTestApp();
  auth = (await signedInUser(t.ctx, { operator: true })).auth;
  const now = t.clock.now;
  const rows: [name: string, kind: string, queue: string, state: store.JobState][] = [
    ['a1', 'filter.a', 'filter-q1', 'completed'],
    ['b1', 'filter.b', 'filter-q1', 'retryable'],
    ['c1', 'filter.c', 'filter-q2', 'discarded'],
    ['a2', 'filter.a', 'filter-q2', 'discarded'],
    ['b2', 'filter.b', 'filter-q2', 'running'],
    ['c2', 'filter.c', 'filter-q1', 'available'],
    ['a3', 'filter.a', 'filter-q1', 'retryable'],
    ['b3', 'filter.b', 'filter-q3', 'cancelled'],
  ];
  const inserted = await store.insertRuns(
    t.ctx.db,
    rows.map(([, kind, queue]) => ({ kind, queue, priority: 0, maxAttempts: 1, timeoutMs: 1_000, payload: {}, scheduledAt: now, now, actorKind: 'system' as const, actorId: null, requestId: null })),
  );
  for (const [i, [name, , , state]] of rows.entries()) {
    ids[name] = inserted[i]!.id;
    if (state !== 'available') await t.ctx.db('job_runs').where({ id: ids[name] }).update({ state, finalized_at: store.FINAL_STATES.includes(state) ? now : null });
  }
});
afterAll(() => t.close());

const list = async (query: string) => (await t.http.get(`/ops/jobs/runs?${query}`).set('Authorization', auth).expect(200)).body as { items: { id: number; state: string }[]; next_cursor: string | null };
const names = (body: { items: { id: number }[] }) => body.items.map((r) => Object.keys(ids).find((n) => ids[n] === r.id) ?? r.id);
/** Only this file's runs (other kinds may share a state). */
const mine = `kind=${['filter.a', 'filter.b', 'filter.c'].join(',')}`;

describe('several values per filter', () => {
  it('state=retryable,discarded and repeated state parameters give the same runs, newest first', async () => {
    const comma = await list(`${mine}&state=retryable,discarded`);
    expect(names(comma)).toEqual(['a3', 'a2', 'c1', 'b1']);
    expect(await list(`${mine}&state=retryable&state=discarded`)).toEqual(comma);
    // Encoded commas, as some clients send them.
    expect(await list(`${mine}&state=retryable%2Cdiscarded`)).toEqual(comma);
    // Both forms at once.
    expect(await list(`${mine}&state=retryable&state=discarded,retryable`)).toEqual(comma);
    // One value still works, and a value given twice counts once.
    expect(names(await list(`${mine}&state=discarded`))).toEqual(['a2', 'c1']);
    expect(names(await list(`${mine}&state=discarded,discarded`))).toEqual(['a2', 'c1']);
  });

  it('combines live and finished states, kinds and queues (OR within a filter, AND between them)', async () => {
    expect(names(await list(`${mine}&state=running,available,cancelled`))).toEqual(['b3', 'c2', 'b2']);
    expect(names(await list('kind=filter.a,filter.c'))).toEqual(['a3', 'c2', 'a2', 'c1', 'a1']);
    expect(names(await list('kind=filter.a&kind=filter.c'))).toEqual(['a3', 'c2', 'a2', 'c1', 'a1']);
    expect(names(await list('queue=filter-q2,filter-q3'))).toEqual(['b3', 'b2', 'a2', 'c1']);
    expect(names(await list('queue=filter-q2&queue=filter-q3'))).toEqual(['b3', 'b2', 'a2', 'c1']);
    expect(names(await list('kind=filter.a,filter.b&queue=filter-q1,filter-q3'))).toEqual(['b3', 'a3', 'b1', 'a1']);
    expect(names(await list('kind=filter.a,filter.b&queue=filter-q1&state=retryable,completed'))).toEqual(['a3', 'b1', 'a1']);
    expect(names(await list('kind=filter.a,filter.none'))).toEqual(['a3', 'a2', 'a1']);
  });

  it('pages through a combined filter with the cursor', async () => {
    const seen: (string | number)[] = [];
    let cursor: string | null = null;
    do {
      const page = await list(`${mine}&state=retryable,discarded,completed&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...names(page));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['a3', 'a2', 'c1', 'b1', 'a1']);
  });
});

describe('invalid values', () => {
  const invalid = async (query: string) => (await t.http.get(`/ops/jobs/runs?${query}`).set('Authorization', auth).expect(422)).body;

  it('answers 422 naming query.state for a value that is not a state, in either form', async () => {
    for (const query of ['state=retryable,bogus', 'state=retryable&state=bogus', 'state=', 'state=retryable,']) {
      const body = await invalid(query);
      expect({ query, code: body.code }).toEqual({ query, code: 'validation_failed' });
      expect(body.errors.length).toBeGreaterThan(0);
      for (const e of body.errors) expect({ query, location: e.location }).toEqual({ query, location: expect.stringMatching(/^query\.state(\[\d+\])?$/) });
    }
  });

  it('answers 422 naming the item for a kind or queue that is not a name, in either form (a SQL fragment is no filter)', async () => {
    const q = (...pairs: [string, string][]) => pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
    for (const [query, location] of [
      [q(['kind', "' OR '1'='1"]), 'query.kind[0]'],
      [q(['kind', "filter.a,' OR '1'='1"]), 'query.kind[1]'],
      [q(['kind', 'filter.a'], ['kind', 'Filter.B']), 'query.kind[1]'],
      [q(['queue', "' OR '1'='1"]), 'query.queue[0]'],
      [q(['queue', 'filter-q1'], ['queue', 'mail;drop']), 'query.queue[1]'],
    ]) {
      const body = await invalid(query!);
      expect({ query, errors: body.errors }).toEqual({ query, errors: [{ location, message: expect.stringMatching(/^must match pattern/) }] });
    }
  });

  it('answers 422 naming the parameter for too many or empty kinds and queues', async () => {
    const many = Array.from({ length: 21 }, (_, i) => `k${i}`).join(',');
    expect((await invalid(`kind=${many}`)).errors).toEqual([{ location: 'query.kind', message: expect.any(String) }]);
    expect((await invalid('queue=mail,')).errors).toEqual([{ location: expect.stringMatching(/^query\.queue\[1\]$/), message: expect.any(String) }]);
  });
});
