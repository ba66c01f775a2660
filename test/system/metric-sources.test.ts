// The error counters of src/platform/metric-sources.ts count what really fails: a statement
// PostgreSQL refuses (inside a transaction too) and a command Redis refuses, by reason, and
// nothing for those that succeed. The pool's sizes are read as they are.
import { startTestApp, type TestApp } from '../support/test-app';
import { poolSizes } from '../../src/platform/metric-sources';
import { prepared, runPrepared, runStatement } from '../../src/platform/prepared';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ METRICS_PORT: '0' });
});
afterAll(() => t.close());

/** The value of one sample of the instance's registry, 0 when absent. */
async function sample(name: string, reason: string): Promise<number> {
  const metric = await t.ctx.metrics.registry.getSingleMetric(name)!.get();
  return metric.values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

it('counts failed PostgreSQL statements, in transactions too, and not the ones that succeed', async () => {
  const before = await sample('db_query_errors_total', 'error');
  await t.ctx.db.raw('select 1');
  await expect(t.ctx.db.raw('select 1 / 0')).rejects.toThrow(/division by zero/);
  await expect(t.ctx.db.transaction((trx) => trx.raw('select * from no_such_table'))).rejects.toThrow(/no_such_table/);
  expect(await sample('db_query_errors_total', 'error')).toBe(before + 2);
  expect(await sample('db_query_errors_total', 'unavailable')).toBe(0);
});

it('counts the failures of the statements sent past knex (prepared, and built per call) too', async () => {
  const before = await sample('db_query_errors_total', 'error');
  await expect(runPrepared(t.ctx.db, prepared('test.divide', 'select 1 / $1::int as n'), [1])).resolves.toEqual([{ n: 1 }]);
  await expect(runPrepared(t.ctx.db, prepared('test.divide', 'select 1 / $1::int as n'), [0])).rejects.toThrow(/division by zero/);
  await expect(t.ctx.db.transaction((trx) => runStatement(trx, 'select * from no_such_table where id = $1', [1], 'test'))).rejects.toThrow(/no_such_table/);
  expect(await sample('db_query_errors_total', 'error')).toBe(before + 2);
});

it('counts failed Redis commands of the requests\' connection, and not the ones that succeed', async () => {
  const before = await sample('redis_command_errors_total', 'error');
  await t.ctx.redis.ping();
  await t.ctx.redis.set(`${t.ctx.config.redisPrefix}metric-test`, 'a string');
  await expect(t.ctx.redis.incr(`${t.ctx.config.redisPrefix}metric-test`)).rejects.toThrow(/not an integer/);
  expect(await sample('redis_command_errors_total', 'error')).toBe(before + 1);
  expect(await sample('redis_command_errors_total', 'unavailable')).toBe(0);
});

it('reads the pool: a connection held by a transaction is in use', async () => {
  await t.ctx.db.transaction(async (trx) => {
    await trx.raw('select 1');
    expect(poolSizes(t.ctx.db).used).toBeGreaterThanOrEqual(1);
  });
  const after = poolSizes(t.ctx.db);
  expect(after.used).toBe(0);
  expect(after.free).toBeGreaterThanOrEqual(1);
  expect(after.pending).toBe(0);
});
