// Releases and instances: what a process start records, its heartbeat, a clean stop against a
// crash, the three operator lists and their pages, retention of instance records, and the real
// process recording itself and its SIGTERM.
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { freePort } from '../support/ports';
import { waitFor } from '../support/wait';
import { capturingLogger, linesWith } from '../support/logs';
import { projectRoot, type Config } from '../../src/config';
import { createDatabase, type Db } from '../../src/platform/database';
import { InstanceRegistry } from '../../src/releases/registry';

const MINUTE = 60_000;

let t: TestApp;
let operator: string;
let member: string;
const registries: InstanceRegistry[] = [];

beforeAll(async () => {
  t = await startTestApp();
  operator = (await signedInUser(t.ctx, { operator: true })).auth;
  member = (await signedInUser(t.ctx)).auth;
});
afterAll(async () => {
  await Promise.all(registries.map((r) => r.stop()));
  await t.close();
});

let builds = 0;
/** A build of its own, so what one test records does not mix with another's. */
const newBuild = () => ({ version: `1.0.${++builds}`, commit: randomBytes(4).toString('hex'), builtAt: '2026-11-20T10:00:00Z' });

/** A process start as main.ts makes it, on the test's database and clock unless told otherwise. */
function registry(build: Config['build'] = newBuild(), opts: { now?: () => Date; heartbeatMs?: number; db?: () => Db; logs?: string[] } = {}) {
  const r = new InstanceRegistry({
    build,
    db: opts.db ?? (() => t.ctx.db),
    logger: opts.logs ? capturingLogger(opts.logs) : t.ctx.logger,
    now: opts.now ?? t.ctx.now,
    heartbeatMs: opts.heartbeatMs ?? 3_600_000,
  });
  registries.push(r);
  return r;
}

const get = (url: string) => t.http.get(url).set('Authorization', operator).expect(200);
const instanceRow = (id: string) => t.ctx.db('instances').where({ id }).first();
const releaseRow = (id: string) => t.ctx.db('releases').where({ id }).first();

async function instancesById(): Promise<Map<string, any>> {
  const res = await get('/ops/releases/instances?limit=200');
  return new Map(res.body.items.map((i: any) => [i.id, i]));
}

describe('a process start', () => {
  it('is known before it is recorded; recording upserts the release and inserts the instance', async () => {
    const build = newBuild();
    const r = registry(build);
    expect(r.identity).toEqual({ id: expect.stringMatching(/^ins_[0-9a-z]{26}$/), hostname: os.hostname(), pid: process.pid, startedAt: t.clock.now });
    expect(r.registered).toBe(false);
    const provisional = r.release();
    expect(provisional).toMatchObject({ version: build.version, commit: build.commit, builtAt: new Date(build.builtAt), firstSeenAt: t.clock.now });

    await r.start();
    expect(r.registered).toBe(true);
    // The provisional id is the one a new release is recorded under.
    expect(r.release().id).toBe(provisional.id);
    expect(await releaseRow(provisional.id)).toMatchObject({ version: build.version, commit: build.commit, built_at: new Date(build.builtAt), first_seen_at: t.clock.now });
    expect(await instanceRow(r.identity.id)).toEqual({
      id: r.identity.id,
      hostname: os.hostname(),
      pid: process.pid,
      release_id: provisional.id,
      started_at: t.clock.now,
      last_heartbeat_at: t.clock.now,
      stopped_at: null,
    });
  });

  it('a restart of the same build adds an instance to the same release; the stop records stopped_at', async () => {
    const build = newBuild();
    const first = registry(build);
    await first.start();
    t.clock.advance(5_000);
    await first.stop();
    expect((await instanceRow(first.identity.id)).stopped_at).toEqual(t.clock.now);

    t.clock.advance(5_000);
    const second = registry(build);
    await second.start();
    expect(second.release().id).toBe(first.release().id);
    const release = await releaseRow(first.release().id);
    expect(release).toMatchObject({ first_seen_at: new Date(t.clock.now.getTime() - 10_000), last_seen_at: t.clock.now });
    expect(await t.ctx.db('instances').where({ release_id: release.id }).count('* as n').first()).toEqual({ n: 2 });

    const listed = await instancesById();
    expect(listed.get(first.identity.id)).toMatchObject({ running: false, stopped_at: new Date(t.clock.now.getTime() - 5_000).toISOString() });
    expect(listed.get(second.identity.id)).toMatchObject({ running: true, stopped_at: null, release: { id: release.id, version: build.version } });
  });

  it('a build time the database cannot take is recorded as unknown', async () => {
    const r = registry({ ...newBuild(), builtAt: 'yesterday, roughly' });
    await r.start();
    expect(r.registered).toBe(true);
    expect(r.release().builtAt).toBeNull();
  });
});

describe('heartbeats', () => {
  it('update the instance and its release every interval, in the background', async () => {
    const r = registry(newBuild(), { now: () => new Date(), heartbeatMs: 30 });
    await r.start();
    const first = (await instanceRow(r.identity.id)).last_heartbeat_at as Date;
    const later = await waitFor('two more heartbeats', async () => {
      const row = await instanceRow(r.identity.id);
      return row.last_heartbeat_at.getTime() >= first.getTime() + 60 && row;
    });
    expect((await releaseRow(later.release_id)).last_seen_at.getTime()).toBeGreaterThanOrEqual(later.last_heartbeat_at.getTime());
    await r.stop();
    const stopped = await instanceRow(r.identity.id);
    expect(stopped.stopped_at).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await instanceRow(r.identity.id)).toEqual(stopped); // no heartbeat after the stop
  });

  it('a database down at start or later: logged once, never thrown, tried again at every heartbeat', async () => {
    const logs: string[] = [];
    const down = createDatabase(`postgres://postgres@127.0.0.1:${await freePort()}/none`, 1, undefined, { connectMs: 200 });
    let db: Db = down;
    const r = registry(newBuild(), { db: () => db, heartbeatMs: 50, logs });
    try {
      await r.start(); // resolves although nothing could be recorded
      await r.beat();
      await r.beat();
      expect(r.registered).toBe(false);
      expect(linesWith(logs, 'could not record this instance or its heartbeat; trying again at every heartbeat')).toHaveLength(1);
      expect(logs).toHaveLength(1);

      db = t.ctx.db; // the database is back
      await waitFor('the instance to be recorded', async () => r.registered);
      expect(await instanceRow(r.identity.id)).toMatchObject({ stopped_at: null });
      expect(linesWith(logs, 'instance heartbeat recorded again')[0]!.failed_heartbeats).toBeGreaterThanOrEqual(3);

      db = down; // down again after it was recorded
      await r.beat();
      await r.beat();
      expect(linesWith(logs, 'could not record this instance or its heartbeat; trying again at every heartbeat')).toHaveLength(2);
      db = t.ctx.db;
    } finally {
      await down.destroy();
    }
  });

  it('a record deleted meanwhile is made again at the next heartbeat', async () => {
    const r = registry();
    await r.start();
    await t.ctx.db('instances').where({ id: r.identity.id }).delete();
    await r.beat();
    expect(await instanceRow(r.identity.id)).toMatchObject({ release_id: r.release().id, stopped_at: null });
  });
});

describe('GET /ops/releases/current', () => {
  it('lists releases with instances that heartbeat within 60 s and are not stopped, with their count, newest first', async () => {
    const [oldBuild, newBuild_, crashedBuild, stoppedBuild] = [newBuild(), newBuild(), newBuild(), newBuild()];
    const crashed = registry(crashedBuild);
    await crashed.start(); // never stops, never beats again: a crash
    const stopped = registry(stoppedBuild);
    await stopped.start();
    await stopped.stop();
    t.clock.advance(MINUTE + 1_000);

    // A rolling deploy: one instance of the old release, two of the new one.
    await registry(oldBuild).start();
    t.clock.advance(1_000);
    await registry(newBuild_).start();
    await registry(newBuild_).start();
    t.clock.advance(MINUTE - 1_000); // the old release's heartbeat is exactly 60 s old: still running

    const res = await get('/ops/releases/current');
    const mine = res.body.items.filter((i: any) => [oldBuild, newBuild_, crashedBuild, stoppedBuild].some((b) => b.commit === i.release.commit));
    expect(mine.map((i: any) => [i.release.version, i.instances])).toEqual([
      [newBuild_.version, 2],
      [oldBuild.version, 1],
    ]);
    expect(res.body.next_cursor).toBeNull();

    const listed = await instancesById();
    expect(listed.get(crashed.identity.id)).toMatchObject({ running: false, stopped_at: null });

    t.clock.advance(1);
    const after = await get('/ops/releases/current');
    expect(after.body.items.some((i: any) => i.release.commit === oldBuild.commit)).toBe(false);
  });
});

describe('pages', () => {
  it('GET /ops/releases: newest first by first seen, every release once across pages', async () => {
    for (let i = 0; i < 3; i++) {
      t.clock.advance(1_000);
      await registry().start();
    }
    const expected = (await t.ctx.db('releases').orderBy([{ column: 'first_seen_at', order: 'desc' }, { column: 'id', order: 'desc' }]).select('id')).map((r) => r.id);
    expect(expected.length).toBeGreaterThan(5);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: any = await get(`/ops/releases?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.items.map((r: any) => r.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(expected);
  });

  it('GET /ops/releases/instances: newest first by start, every instance once across pages', async () => {
    const expected = (await t.ctx.db('instances').orderBy([{ column: 'started_at', order: 'desc' }, { column: 'id', order: 'desc' }]).select('id')).map((r) => r.id);
    expect(expected.length).toBeGreaterThan(5);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: any = await get(`/ops/releases/instances?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...res.body.items.map((i: any) => i.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(expected);
  });

  it('refuses a cursor that is not one of the list, naming query.cursor', async () => {
    const releasesCursor = (await get('/ops/releases?limit=1')).body.next_cursor;
    for (const url of ['/ops/releases?cursor=nope', `/ops/releases/instances?cursor=${releasesCursor}`, '/ops/releases?limit=0']) {
      const res = await t.http.get(url).set('Authorization', operator).expect(422);
      expect(res.body.errors[0].location).toMatch(/^query\.(cursor|limit)$/);
    }
  });
});

describe('pruneInstances', () => {
  it('deletes instances stopped or silent before the cut-off, then releases left without instances, except the current one', async () => {
    // A clock of its own, years before every other record of this file: the cut-off selects only these.
    let now = new Date('2001-01-01T00:00:00Z');
    const clock = () => now;
    const at = (iso: string) => (now = new Date(iso));
    const gone = newBuild();
    const kept = newBuild();
    const current = t.ctx.config.build;

    const stoppedEarly = registry(gone, { now: clock });
    await stoppedEarly.start();
    at('2001-01-02T00:00:00Z');
    await stoppedEarly.stop();
    const crashedEarly = registry(gone, { now: clock });
    await crashedEarly.start(); // last heartbeat 2001-01-02, never stopped
    const currentEarly = registry(current, { now: clock });
    await currentEarly.start();
    await currentEarly.stop();
    const stoppedLate = registry(kept, { now: clock });
    await stoppedLate.start();
    at('2001-03-01T00:00:00Z');
    await stoppedLate.stop(); // stopped after the cut-off, though started before it
    const crashedLate = registry(kept, { now: clock });
    await crashedLate.start(); // heartbeat after the cut-off

    const cutoff = new Date('2001-02-01T00:00:00Z');
    const before = await t.ctx.db('instances').count('* as n').first();
    expect(await t.ctx.services.releases.pruneInstances(cutoff)).toBe(3);
    expect(await t.ctx.db('instances').count('* as n').first()).toEqual({ n: (before!.n as number) - 3 });
    for (const r of [stoppedEarly, crashedEarly, currentEarly]) expect(await instanceRow(r.identity.id)).toBeUndefined();
    for (const r of [stoppedLate, crashedLate]) expect(await instanceRow(r.identity.id)).toBeDefined();
    expect(await releaseRow(stoppedEarly.release().id)).toBeUndefined();
    expect(await releaseRow(stoppedLate.release().id)).toBeDefined();
    expect(await t.ctx.db('releases').where({ version: current.version, commit: current.commit }).first()).toBeDefined();

    expect(await t.ctx.services.releases.pruneInstances(cutoff)).toBe(0);
  });
});

describe('operators only', () => {
  it.each(['/ops/releases', '/ops/releases/current', '/ops/releases/instances'])('%s: 401 anonymous, 403 not an operator', async (url) => {
    expect((await t.http.get(url).expect(401)).body.code).toBe('unauthenticated');
    expect((await t.http.get(url).set('Authorization', member).expect(403)).body.code).toBe('forbidden');
  });
});

describe('the real process', () => {
  let child: ChildProcess | null = null;
  afterEach(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  /** `serve` as an operator runs it: one node process with tsx as a loader (SIGTERM reaches main.ts). */
  async function serve(build: ReturnType<typeof newBuild>) {
    const port = await freePort();
    let output = '';
    const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
      cwd: projectRoot,
      env: {
        ...process.env,
        NODE_ENV: 'development',
        DATABASE_URL: t.ctx.config.databaseUrl!,
        REDIS_PREFIX: `test:releases:${randomBytes(4).toString('hex')}:`,
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'info',
        RUN_WORKERS: 'false',
        SMTP_URL: '',
        BUILD_VERSION: build.version,
        BUILD_COMMIT: build.commit,
        BUILD_TIME: build.builtAt,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    proc.stdout!.on('data', (d) => (output += d));
    proc.stderr!.on('data', (d) => (output += d));
    const exit = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    const row = await waitFor('the process to record its instance', async () => t.ctx.db('instances').where({ pid: proc.pid, hostname: os.hostname() }).whereNull('stopped_at').first(), 30_000).catch((err) => {
      throw new Error(`${err.message}\n${output}`);
    });
    await waitFor('the process to answer', () => ping(port), 10_000);
    return { proc, row, exit, output: () => output };
  }

  it('records its release and instance at start, and stopped_at on SIGTERM; a restart adds an instance to the release', async () => {
    const build = newBuild();
    const first = await serve(build);
    const release = await releaseRow(first.row.release_id);
    expect(release).toMatchObject({ version: build.version, commit: build.commit, built_at: new Date(build.builtAt) });
    expect(linesOf(first.output()).find((l) => l.message === 'instance recorded')).toMatchObject({ instance_id: first.row.id, release_id: release.id });

    first.proc.kill('SIGTERM');
    expect(await first.exit).toBe(0);
    const stopped = await instanceRow(first.row.id);
    expect(stopped.stopped_at).not.toBeNull();
    expect(stopped.stopped_at.getTime()).toBeGreaterThanOrEqual(stopped.last_heartbeat_at.getTime());

    const second = await serve(build);
    expect(second.row.id).not.toBe(first.row.id);
    expect(second.row.release_id).toBe(release.id);
    second.proc.kill('SIGKILL'); // a crash: no stopped_at
    await second.exit;
    expect((await instanceRow(second.row.id)).stopped_at).toBeNull();
  }, 90_000);
});

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      })
      .on('error', () => resolve(false));
  });
}

function linesOf(output: string): Record<string, any>[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}
