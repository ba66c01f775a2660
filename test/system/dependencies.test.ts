// Which errors mean "a dependency is down" (503, counted by the monitor) and which are bugs (500),
// and the monitor's two lines per outage. The real failures (frozen, killed servers) are in
// database-outage.test.ts and redis-outage.test.ts; this pins the table and the counting.
import { capturingLogger, linesWith } from '../support/logs';
import { sleep, waitFor } from '../support/wait';
import { DependencyMonitor, DependencyUnavailable, unavailableDependency } from '../../src/platform/dependencies';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });
const named = (message: string, name: string) => Object.assign(new Error(message), { name });

describe('unavailableDependency', () => {
  it.each([
    ['a pool wait that timed out', named('Knex: Timeout acquiring a connection. The pool is probably full.', 'KnexTimeoutError'), 'database'],
    ['a query with no answer', new Error('Query read timeout'), 'database'],
    ['a statement run by knex with no answer (knex puts the statement first)', new Error('BEGIN; - Query read timeout'), 'database'],
    ['a connection lost under a statement run by knex', new Error('select * from users where email = ? - Connection terminated unexpectedly'), 'database'],
    ['a connection that could not be made in time', new Error('timeout expired'), 'database'],
    ['a connection lost', new Error('Connection terminated unexpectedly'), 'database'],
    ['a refused connection', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'), 'database'],
    ['an administrator shutdown', withCode('terminating connection due to administrator command', '57P01'), 'database'],
    ['a statement past statement_timeout', withCode('canceling statement due to statement timeout', '57014'), 'database'],
    ['a connection exception (class 08)', withCode('connection failure', '08006'), 'database'],
    ['a Redis command with no answer', new Error('Command timed out'), 'redis'],
    ['Redis not connected', new Error("Stream isn't writeable and enableOfflineQueue options is false"), 'redis'],
    ['Redis retries spent', named('Reached the max retries per request limit (which is 1).', 'MaxRetriesPerRequestError'), 'redis'],
    ['our own refusal', new DependencyUnavailable('redis', 'redis is not reachable (reconnecting)'), 'redis'],
    ['a write to a primary a failover demoted', named("READONLY You can't write against a read only replica.", 'ReplyError'), 'redis'],
    ['a MULTI refused for a demoted primary', Object.assign(named('EXECABORT Transaction discarded because of previous errors.', 'ReplyError'), { previousErrors: [new Error("READONLY You can't write against a read only replica.")] }), 'redis'],
    ['no Sentinel answering', new Error('All sentinels are unreachable. Retrying from scratch after 200ms.'), 'redis'],
  ])('%s', (_what, err, dependency) => {
    expect(unavailableDependency(err)).toBe(dependency);
  });

  it.each([
    ['a unique violation', withCode('duplicate key value violates unique constraint', '23505')],
    ['a programming error', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a syntax error in SQL', withCode('syntax error at or near "selec"', '42601')],
    ['a server error quoting a value that looks like a timeout', withCode('select $1::uuid - invalid input syntax for type uuid: "x - Query read timeout"', '22P02')],
    ['a thrown string', 'boom'],
    ['a MULTI refused for a command of ours', Object.assign(named('EXECABORT Transaction discarded because of previous errors.', 'ReplyError'), { previousErrors: [new Error("ERR wrong number of arguments for 'incr' command")] })],
  ])('not %s', (_what, err) => {
    expect(unavailableDependency(err)).toBeNull();
  });
});

describe('DependencyMonitor', () => {
  it('logs an outage once when it starts and once when a probe finds it over, with its length and the requests refused', async () => {
    const lines: string[] = [];
    let answering = false;
    const monitor = new DependencyMonitor({
      logger: capturingLogger(lines),
      probes: { database: async () => (answering ? undefined : Promise.reject(new Error('still down'))), redis: async () => undefined },
      probeIntervalMs: 20,
    });
    for (let i = 0; i < 5; i++) monitor.failed('database', new Error('Query read timeout'), { request: true });
    monitor.failed('database', new Error('timeout expired')); // background work: not a request
    expect(monitor.isDown('database')).toBe(true);
    expect(monitor.isDown('redis')).toBe(false);
    answering = true;
    await waitFor('the probe to end the outage', async () => !monitor.isDown('database'));

    const down = linesWith(lines, 'dependency down: requests that need it answer 503 until it is back');
    expect(down).toEqual([expect.objectContaining({ dependency: 'database', error: 'Query read timeout', level: 'error' })]);
    expect(down[0]!.stack).toBeUndefined();
    const back = linesWith(lines, 'dependency back');
    expect(back).toEqual([expect.objectContaining({ dependency: 'database', refused_requests: 5, level: 'info' })]);
    expect(back[0]!.outage_ms).toBeGreaterThanOrEqual(0);
    expect(lines).toHaveLength(2);
    monitor.stop();
  });

  it('an event saying the dependency answers ends the outage at once; a second outage is logged again', () => {
    const lines: string[] = [];
    const monitor = new DependencyMonitor({ logger: capturingLogger(lines), probes: { database: () => new Promise(() => undefined), redis: () => new Promise(() => undefined) } });
    monitor.failed('redis', new Error('Command timed out'), { request: true });
    monitor.up('redis');
    monitor.up('redis'); // nothing to end
    monitor.failed('redis', new Error('Connection is closed.'), { request: true });
    expect(lines.map((l) => JSON.parse(l).message)).toEqual([
      'dependency down: requests that need it answer 503 until it is back',
      'dependency back',
      'dependency down: requests that need it answer 503 until it is back',
    ]);
    monitor.stop();
  });

  it('tells metrics each dependency\'s state and its seconds of outage, the one under way included (dependency_up, dependency_outage_seconds_total)', async () => {
    const monitor = new DependencyMonitor({ logger: capturingLogger([]), probes: { database: () => new Promise(() => undefined), redis: () => new Promise(() => undefined) } });
    expect(monitor.states()).toEqual([
      { name: 'database', up: true, outageSeconds: 0 },
      { name: 'redis', up: true, outageSeconds: 0 },
    ]);
    monitor.failed('redis', new Error('Command timed out'));
    await sleep(60);
    const during = monitor.states().find((d) => d.name === 'redis')!;
    expect(during.up).toBe(false);
    expect(during.outageSeconds).toBeGreaterThanOrEqual(0.05);
    monitor.up('redis');
    await sleep(150);
    const after = monitor.states().find((d) => d.name === 'redis')!;
    expect(after.up).toBe(true);
    // The ended outage is kept, and no longer grows.
    expect(after.outageSeconds).toBeGreaterThanOrEqual(during.outageSeconds);
    expect(after.outageSeconds).toBeLessThan(during.outageSeconds + 0.1);
    expect(monitor.states().find((d) => d.name === 'database')).toEqual({ name: 'database', up: true, outageSeconds: 0 });
    monitor.stop();
  });
});
