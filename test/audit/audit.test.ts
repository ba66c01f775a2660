// GET /ops/audit, /ops/audit/{id} and /ops/audit/stats: filters, pagination (also while events
// arrive, and among events of the same microsecond), window bounds, counts from rollups and live
// counts against plain SQL counts, and the refusals. Events with chosen times are inserted
// straight into audit_events (each test in its own year, or with its own ids, so that tests do not
// see each other's events); the service never writes an `at` of its choosing.
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { newId } from '../../src/ids';

let t: TestApp;
let operator: string;

beforeAll(async () => {
  t = await startTestApp({ BCRYPT_COST: '4' });
  operator = (await signedInUser(t.ctx, { operator: true })).auth;
});
afterAll(() => t?.close());

const DAY_MS = 24 * 3600 * 1000;

interface Seed {
  at: string;
  action?: string;
  actor_id?: string | null;
  org_id?: string | null;
  target_id?: string | null;
}

/** Inserts events (at: any timestamptz text, microseconds kept); answers their ids in the order given. */
async function insert(events: Seed[]): Promise<string[]> {
  const rows = events.map((e) => ({
    id: newId('aud'),
    at: e.at,
    action: e.action ?? 'test.sample.made',
    actor_kind: 'user',
    actor_id: e.actor_id ?? null,
    target_kind: e.target_id ? 'user' : null,
    target_id: e.target_id ?? null,
    org_id: e.org_id ?? null,
    data: {},
  }));
  for (let i = 0; i < rows.length; i += 1000) await t.ctx.db('audit_events').insert(rows.slice(i, i + 1000));
  return rows.map((r) => r.id);
}

const uniq = (prefix: string) => `${prefix}_${newId('aud').slice(4)}`;
const orgId = () => newId('org');

const get = (url: string) => t.http.get(url).set('Authorization', operator);

/** Every page of `url` (limit `limit`), following next_cursor; `between` runs after each page. */
async function allPages(url: string, limit: number, between?: () => Promise<void>) {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = url.includes('?') ? '&' : '?';
    const body: { items: { id: string }[]; next_cursor: string | null } = (await get(`${url}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`).expect(200)).body;
    ids.push(...body.items.map((e) => e.id));
    cursor = body.next_cursor;
    pages++;
    if (between) await between();
  } while (cursor);
  return { ids, pages };
}

/** Ids of the events `where` selects, newest first, by plain SQL. */
const expected = async (where: (q: any) => void) => (await t.ctx.db('audit_events').select('id').where(where).orderBy([{ column: 'at', order: 'desc' }, { column: 'id', order: 'desc' }])).map((r) => r.id);

describe('GET /ops/audit', () => {
  it('filters by action (exact and prefix), actor, organisation and target, alone and combined', async () => {
    const actor = uniq('usr');
    const other = uniq('usr');
    const org = orgId();
    const target = uniq('usr');
    const tag = uniq('x').toLowerCase();
    const a = (verb: string) => `${tag}.thing.${verb}`;
    await insert([
      { at: '2001-01-01T00:00:01Z', action: a('made'), actor_id: actor, org_id: org, target_id: target },
      { at: '2001-01-01T00:00:02Z', action: a('made'), actor_id: other, org_id: org },
      { at: '2001-01-01T00:00:03Z', action: a('gone'), actor_id: actor },
      { at: '2001-01-01T00:00:04Z', action: `${tag}.other.made`, actor_id: actor, target_id: target },
      { at: '2001-01-01T00:00:05Z', action: `${tag}_thing.made`, actor_id: actor }, // `_` is no wildcard
      { at: '2001-01-01T00:00:06Z', action: `${tag}.thingy.made`, actor_id: actor }, // `thing.*` stops at the dot
    ]);
    const cases: [string, (q: any) => void][] = [
      [`action=${a('made')}`, (q) => q.where('action', a('made'))],
      [`action=${tag}.thing.*`, (q) => q.where('action', 'like', `${tag}.thing.%`)],
      [`action=${tag}.*`, (q) => q.where('action', 'like', `${tag}.%`)],
      [`actor_id=${actor}`, (q) => q.where('actor_id', actor)],
      [`org_id=${org}`, (q) => q.where('org_id', org)],
      [`target_id=${target}`, (q) => q.where('target_id', target)],
      [`action=${tag}.*&actor_id=${actor}`, (q) => q.where('action', 'like', `${tag}.%`).where('actor_id', actor)],
      [`action=${a('made')}&org_id=${org}&actor_id=${actor}`, (q) => q.where({ action: a('made'), org_id: org, actor_id: actor })],
      [`target_id=${target}&action=${tag}.other.*`, (q) => q.where('target_id', target).where('action', 'like', `${tag}.other.%`)],
    ];
    for (const [query, where] of cases) {
      const want = await expected(where);
      expect(want.length).toBeGreaterThan(0);
      // One page, and pages of one: the same events in the same order.
      const res = await get(`/ops/audit?${query}`).expect(200);
      expect([query, res.body.items.map((e: { id: string }) => e.id)]).toEqual([query, want]);
      expect(res.body.next_cursor).toBeNull();
      expect([query, (await allPages(`/ops/audit?${query}`, 1)).ids]).toEqual([query, want]);
    }
    // Exact counts where they are known.
    expect((await get(`/ops/audit?action=${tag}.thing.*`).expect(200)).body.items).toHaveLength(3);
    expect((await get(`/ops/audit?action=${tag}.*&actor_id=${actor}`).expect(200)).body.items).toHaveLength(4);
    expect((await get(`/ops/audit?action=${tag}.nothing.*`).expect(200)).body).toEqual({ items: [], next_cursor: null });
  });

  it('answers the event in the contract shape: target or null, at in UTC with Z', async () => {
    const org = orgId();
    const target = uniq('usr');
    const [withTarget, without] = await insert([
      { at: '2001-02-03T04:05:06.789+02:00', actor_id: 'provider_b', org_id: org, target_id: target },
      { at: '2001-02-03T04:05:07Z', org_id: org },
    ]);
    const res = await get(`/ops/audit?org_id=${org}`).expect(200);
    expect(res.body.items.map((e: { id: string }) => e.id)).toEqual([without, withTarget]);
    expect(res.body.items[1]).toEqual({
      id: withTarget,
      at: '2001-02-03T02:05:06.789Z',
      action: 'test.sample.made',
      actor: { kind: 'user', id: 'provider_b' },
      target: { kind: 'user', id: target },
      org_id: org,
      ip: null,
      user_agent: null,
      request_id: null,
      data: {},
    });
    expect(res.body.items[0].target).toBeNull();
    const one = await get(`/ops/audit/${withTarget}`).expect(200);
    expect(one.body).toEqual(res.body.items[1]);
  });

  it('pages without repeats or skips, also among events of the same microsecond and while new events arrive', async () => {
    const actor = uniq('usr');
    // 25 events in 5 instants (5 share each microsecond; ids break the tie), 3 more in the same millisecond.
    const seeds: Seed[] = [];
    for (let i = 0; i < 25; i++) seeds.push({ at: `2002-05-05T10:00:0${Math.floor(i / 5)}.000001Z`, actor_id: actor });
    for (const us of ['000002', '000003', '000004']) seeds.push({ at: `2002-05-05T10:00:05.${us}Z`, actor_id: actor });
    await insert(seeds);
    const want = await expected((q) => q.where('actor_id', actor));
    expect(want).toHaveLength(28);
    for (const limit of [1, 3, 5, 7, 28]) {
      const { ids, pages } = await allPages(`/ops/audit?actor_id=${actor}`, limit);
      expect(ids).toEqual(want);
      expect(pages).toBe(Math.ceil(28 / limit));
    }
    // Newer events arrive (as the service writes them, `at` = now) between pages: they are not in
    // this walk (they are above its cursor), and nothing of the walk repeats or goes missing.
    const arrived: string[] = [];
    const { ids } = await allPages(`/ops/audit?actor_id=${actor}`, 4, async () => {
      arrived.push(await t.ctx.services.audit.record({ action: 'test.sample.arrived', actor: { kind: 'user', id: actor } }));
    });
    expect(ids).toEqual(want);
    const first = await get(`/ops/audit?actor_id=${actor}&limit=${arrived.length}`).expect(200);
    expect(first.body.items.map((e: { id: string }) => e.id).sort()).toEqual([...arrived].sort());
  });

  it('since is inclusive and until exclusive, to the microsecond', async () => {
    const actor = uniq('usr');
    const [before, atSince, inside, beforeUntil, atUntil] = await insert([
      { at: '2003-03-03T12:00:00.999999Z', actor_id: actor },
      { at: '2003-03-03T12:00:01Z', actor_id: actor },
      { at: '2003-03-03T12:00:01.000001Z', actor_id: actor },
      { at: '2003-03-03T12:00:01.999999Z', actor_id: actor },
      { at: '2003-03-03T12:00:02Z', actor_id: actor },
    ]);
    const list = async (q: string) => (await get(`/ops/audit?actor_id=${actor}&${q}`).expect(200)).body.items.map((e: { id: string }) => e.id);
    expect(await list('since=2003-03-03T12:00:01Z&until=2003-03-03T12:00:02Z')).toEqual([beforeUntil, inside, atSince]);
    expect(await list('since=2003-03-03T14:00:01.000001%2B02:00')).toEqual([atUntil, beforeUntil, inside]);
    expect(await list('until=2003-03-03T12:00:01.000001Z')).toEqual([atSince, before]);
    // Digits finer than PostgreSQL's microseconds are dropped.
    expect(await list('since=2003-03-03T12:00:01.9999999Z&until=2003-03-03T12:00:02.0000001Z')).toEqual([beforeUntil]);
  });

  it('answers 404 for an unknown id, and 422 for a malformed one, a bad cursor or since not before until', async () => {
    expect((await get(`/ops/audit/${newId('aud')}`).expect(404)).body.code).toBe('not_found');
    const bad = async (url: string, location: string) => {
      const res = await get(url).expect(422);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors.map((e: { location: string }) => e.location)).toContain(location);
    };
    await bad('/ops/audit/aud_nope', 'path.id');
    await bad('/ops/audit/usr_01jd8x4k3m5n6p7q8r9s0t1v2w', 'path.id');
    await bad('/ops/audit?cursor=bm90LWEtY3Vyc29y', 'query.cursor');
    await bad(`/ops/audit?cursor=${Buffer.from(JSON.stringify({ at: 'yesterday', id: 'x' })).toString('base64url')}`, 'query.cursor');
    await bad('/ops/audit?since=2003-03-03T12:00:00Z&until=2003-03-03T12:00:00Z', 'query.until');
    await bad('/ops/audit?since=yesterday', 'query.since');
    await bad('/ops/audit?until=1969-12-31T23:59:59Z', 'query.until');
    await bad('/ops/audit?action=Auth.login', 'query.action');
    await bad('/ops/audit?action=auth.*.failed', 'query.action');
    await bad('/ops/audit?limit=201', 'query.limit');
  });

  it('shows what registration and sign-in wrote, and no password or token in any event', async () => {
    const email = `audit-${Date.now()}@example.com`;
    const password = 'correct horse battery staple audit';
    const reg = await t.http.post('/v1/auth/register').send({ email, password, transport: 'bearer' }).expect(201);
    const userId = reg.body.user.id;
    const login = await t.http.post('/v1/auth/login').send({ email, password, transport: 'bearer' }).expect(200);
    await t.http.post('/v1/auth/login').send({ email, password: 'wrong password entirely', transport: 'bearer' }).expect(401);

    const res = await get(`/ops/audit?actor_id=${userId}`).expect(200);
    const actions = res.body.items.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['auth.registered', 'auth.login.succeeded']));
    const succeeded = await get(`/ops/audit?action=auth.login.succeeded&target_id=${login.body.session.id}`).expect(200);
    expect(succeeded.body.items).toHaveLength(1);
    expect(succeeded.body.items[0]).toMatchObject({ actor: { kind: 'user', id: userId }, target: { kind: 'session', id: login.body.session.id } });
    expect((await get('/ops/audit?action=auth.login.*&limit=200').expect(200)).body.items.map((e: { action: string }) => e.action)).toEqual(
      expect.arrayContaining(['auth.login.succeeded', 'auth.login.failed']),
    );

    const secrets = [password, 'wrong password entirely', reg.body.token, login.body.token];
    const stored = JSON.stringify(await t.ctx.db('audit_events').select('*'));
    const listed = JSON.stringify((await allPages('/ops/audit?action=auth.*', 200)).ids) + JSON.stringify(res.body);
    for (const secret of secrets) {
      expect(stored).not.toContain(secret);
      expect(listed).not.toContain(secret);
    }
  });

  it('is for operators only (401 anonymous, 403 others) and reading writes no audit event', async () => {
    const user = await signedInUser(t.ctx);
    for (const url of ['/ops/audit', '/ops/audit/stats', `/ops/audit/${newId('aud')}`]) {
      expect((await t.http.get(url).expect(401)).body.code).toBe('unauthenticated');
      expect((await t.http.get(url).set('Authorization', user.auth).expect(403)).body.code).toBe('forbidden');
    }
    const count = async () => Number((await t.ctx.db('audit_events').count('* as n'))[0]!.n);
    const before = await count();
    await get('/ops/audit').expect(200);
    await get('/ops/audit/stats').expect(200);
    await get(`/ops/audit/${newId('aud')}`).expect(404);
    expect(await count()).toBe(before);
  });
});

describe('GET /ops/audit/stats', () => {
  type Stats = { since: string; until: string; total: number; by_action: { action: string; count: number }[]; by_day: { day: string; count: number }[] };
  const stats = async (q: string): Promise<Stats> => (await get(`/ops/audit/stats?${q}`).expect(200)).body;

  /** The same numbers by plain SQL over [since, until). */
  async function plain(since: string, until: string, action?: string): Promise<Omit<Stats, 'since' | 'until' | 'by_day'> & { by_day: Record<string, number> }> {
    const q = t.ctx.db('audit_events').where('at', '>=', since).where('at', '<', until);
    if (action?.endsWith('*')) q.where('action', 'like', `${action.slice(0, -1)}%`);
    else if (action) q.where('action', action);
    const byAction = await q.clone().select('action').count('* as n').groupBy('action');
    const byDay = await q.clone().select(t.ctx.db.raw("to_char(at at time zone 'UTC', 'YYYY-MM-DD') as day")).count('* as n').groupBy('day');
    const by_action = byAction.map((r: any) => ({ action: r.action, count: Number(r.n) })).sort((a, b) => b.count - a.count || (a.action < b.action ? -1 : 1));
    return { total: by_action.reduce((n, a) => n + a.count, 0), by_action, by_day: Object.fromEntries(byDay.map((r: any) => [r.day, Number(r.n)])) };
  }

  const buckets = async (from: string, to: string) =>
    (await t.ctx.db('audit_rollup_buckets').where('start', '>=', from).where('start', '<', to).select('span').count('* as n').groupBy('span')).reduce(
      (m: Record<string, number>, r: any) => ({ ...m, [r.span]: Number(r.n) }),
      {},
    );

  it('counts a window with partial first and last days, an empty day in between, and edges to the microsecond', async () => {
    await insert([
      { at: '2010-03-01T06:29:59.999999Z', action: 'test.a' }, // before since
      { at: '2010-03-01T06:30:00Z', action: 'test.a' }, // since: inclusive (live: before the first whole hour)
      { at: '2010-03-01T06:45:00Z', action: 'test.b' },
      { at: '2010-03-01T10:00:00Z', action: 'test.a' }, // an hour bucket
      { at: '2010-03-02T00:00:00Z', action: 'test.a' }, // day buckets
      { at: '2010-03-02T12:00:00Z', action: 'test.a' },
      { at: '2010-03-02T12:00:00Z', action: 'test.b' },
      { at: '2010-03-02T23:59:59.999999Z', action: 'test.c' },
      { at: '2010-03-04T23:59:59.999999Z', action: 'test.b' }, // 03-03 has none
      { at: '2010-03-05T17:59:59.999999Z', action: 'test.a' }, // the last hour bucket
      { at: '2010-03-05T18:00:00Z', action: 'test.c' }, // live: after the last whole hour
      { at: '2010-03-05T18:14:59.999999Z', action: 'test.c' },
      { at: '2010-03-05T18:15:00Z', action: 'test.a' }, // until: exclusive
    ]);
    const q = 'since=2010-03-01T06:30:00Z&until=2010-03-05T18:15:00Z';
    const want = {
      since: '2010-03-01T06:30:00.000Z',
      until: '2010-03-05T18:15:00.000Z',
      total: 11,
      by_action: [
        { action: 'test.a', count: 5 },
        { action: 'test.b', count: 3 },
        { action: 'test.c', count: 3 },
      ],
      by_day: [
        { day: '2010-03-01', count: 3 },
        { day: '2010-03-02', count: 4 },
        { day: '2010-03-03', count: 0 },
        { day: '2010-03-04', count: 1 },
        { day: '2010-03-05', count: 3 },
      ],
    };
    expect(await buckets('2010-03-01', '2010-03-06')).toEqual({});
    expect(await stats(q)).toEqual(want);
    // The closed hours and days are now rollups: 17 + 72 + 18 hours (07:00 on the 1st to 18:00 on
    // the 5th) and the 3 whole days between; the second answer reads them.
    expect(await buckets('2010-03-01', '2010-03-06')).toEqual({ hour: 107, day: 3 });
    expect(await stats(q)).toEqual(want);
    expect(await stats(`${q}&action=test.b`)).toEqual({ ...want, total: 3, by_action: [{ action: 'test.b', count: 3 }], by_day: [1, 1, 0, 1, 0].map((count, i) => ({ day: want.by_day[i]!.day, count })) });
    expect((await stats(`${q}&action=test.*`)).total).toBe(11);
    expect((await stats(`${q}&action=tes*`)).total).toBe(11);
    expect((await stats(`${q}&action=test.d`)).total).toBe(0);

    // Proof that closed buckets are what is read: an event slipped into a counted hour afterwards
    // (which the service never does: it writes `at` = now) is not seen, while one in a live edge is.
    await insert([
      { at: '2010-03-03T12:00:00Z', action: 'test.late' },
      { at: '2010-03-05T18:10:00Z', action: 'test.late' },
    ]);
    const after = await stats(q);
    expect(after.total).toBe(12);
    expect(after.by_day[2]).toEqual({ day: '2010-03-03', count: 0 });
    expect(after.by_day[4]).toEqual({ day: '2010-03-05', count: 4 });
  });

  it('equals plain counts over random events, from the rollups and live, with and without an action filter', async () => {
    const actions = ['rand.login.ok', 'rand.login.failed', 'rand.org.made', 'rand.org.gone', 'rand_x.y'];
    const start = Date.UTC(2011, 0, 1);
    let seed = 42;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const seeds: Seed[] = [];
    for (let i = 0; i < 3000; i++) {
      const ms = start + Math.floor(random() * 40 * DAY_MS);
      seeds.push({ at: new Date(ms).toISOString().replace('Z', `${String(Math.floor(random() * 1000)).padStart(3, '0')}Z`), action: actions[Math.floor(random() ** 2 * actions.length)]! });
    }
    await insert(seeds);
    const windows = [
      ['2011-01-03T05:17:22.123456Z', '2011-01-29T19:02:00Z'],
      ['2011-01-10T00:00:00Z', '2011-01-17T00:00:00Z'],
      ['2011-01-20T13:00:00Z', '2011-01-21T02:00:00Z'],
      ['2011-01-05T23:59:59.999999Z', '2011-01-06T00:00:00.000001Z'],
      ['2010-12-15T00:00:00Z', '2011-02-20T00:00:00Z'],
    ];
    for (const pass of ['fills', 'reads']) {
      for (const [since, until] of windows) {
        for (const action of [undefined, 'rand.login.failed', 'rand.login.*', 'rand.*']) {
          const got = await stats(`since=${since}&until=${until}${action ? `&action=${action}` : ''}`);
          const want = await plain(since!, until!, action);
          const label = `${pass} ${since} ${until} ${action}`;
          expect([label, got.total, got.by_action]).toEqual([label, want.total, want.by_action]);
          expect([label, Object.fromEntries(got.by_day.filter((d) => d.count > 0).map((d) => [d.day, d.count]))]).toEqual([label, want.by_day]);
        }
      }
    }
    // The live path over a window of open hours: events of now, no buckets made for them.
    const actor = uniq('usr');
    for (let i = 0; i < 3; i++) await t.ctx.services.audit.record({ action: 'rand.live.now', actor: { kind: 'user', id: actor } });
    const now = Date.now();
    const since = new Date(now - 30 * 60_000).toISOString();
    const until = new Date(now + 60_000).toISOString();
    const live = await stats(`since=${since}&until=${until}&action=rand.live.*`);
    expect(live.total).toBe(3);
    expect(live.by_action).toEqual([{ action: 'rand.live.now', count: 3 }]);
    expect(await buckets(new Date(now - 3600_000).toISOString(), until)).toEqual({});
  });

  it('defaults to the 7 days before now, allows 366 days, and refuses more, an empty or reversed window', async () => {
    const res = await stats('');
    expect(new Date(res.until).getTime() - new Date(res.since).getTime()).toBe(7 * DAY_MS);
    expect(Math.abs(new Date(res.until).getTime() - Date.now())).toBeLessThan(60_000);
    expect(res.by_day.length).toBeGreaterThanOrEqual(7);
    expect(res.by_day.at(-1)!.day).toBe(res.until.slice(0, 10));
    const onlyUntil = await stats('until=2012-06-10T00:00:00Z');
    expect([onlyUntil.since, onlyUntil.by_day.map((d) => d.day)]).toEqual(['2012-06-03T00:00:00.000Z', ['2012-06-03', '2012-06-04', '2012-06-05', '2012-06-06', '2012-06-07', '2012-06-08', '2012-06-09']]);
    const year = await stats('since=2012-01-01T00:00:00Z&until=2013-01-01T00:00:00Z');
    expect(year.by_day).toHaveLength(366);
    const bad = async (q: string, location: string) => {
      const r = await get(`/ops/audit/stats?${q}`).expect(422);
      expect(r.body.errors.map((e: { location: string }) => e.location)).toContain(location);
    };
    await bad('since=2012-01-01T00:00:00Z&until=2013-01-01T00:00:00.001Z', 'query.since');
    await bad('since=2012-01-01T00:00:00Z&until=2012-01-01T00:00:00Z', 'query.since');
    await bad('since=2012-01-02T00:00:00Z&until=2012-01-01T00:00:00Z', 'query.since');
    await bad('since=2999-01-01T00:00:00Z', 'query.since');
    await bad('until=not-a-time', 'query.until');
    await bad('action=AUTH', 'query.action');
  });
});
