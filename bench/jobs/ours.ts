// Our side: runs enqueued through the outbox (job_runs rows written in a transaction, handed to
// BullMQ after commit) and processed by our workers until every row is `completed`.
import type { Knex } from 'knex';
import type { AppContext } from '../../src/app-context';
import type { JobKind } from '../../src/jobs/kinds';
import { inBatches, type Measurement } from './bare';

export const NOOP_KIND = 'bench.noop';

/** A kind that does nothing, on the 'default' queue (its concurrency is what bare BullMQ gets too). */
export const noopKind: JobKind<AppContext> = {
  name: NOOP_KIND,
  description: 'Does nothing (jobs benchmark).',
  defaults: { enabled: true, max_attempts: 1, priority: 0, queue: 'default', schedule: null, timeout: '1m0s' },
  needsPayload: false,
  async handle() {},
};

const FINAL = ['completed', 'cancelled', 'discarded'];

/**
 * Enqueues `n` runs a batch at a time (one `enqueueMany` per batch, then `handOver` of the batch
 * after commit; `producers` such loops at once, like concurrent requests) and waits until all rows
 * are final. `inTransaction`: each batch is written inside an explicit transaction (BEGIN, INSERT,
 * COMMIT: a business transaction that enqueues), else as one statement (its own transaction, as a
 * bulk producer would). `probe` is a separate connection used only to watch progress, so polling
 * never takes a connection from the pool our enqueues and workers use.
 */
export async function measureOurs(
  ctx: AppContext,
  probe: Knex,
  opts: { n: number; batch: number; producers: number; inTransaction: boolean },
): Promise<Measurement> {
  const { n } = opts;
  const by = { actor: { kind: 'system' as const, id: null } };
  const base = Number((await probe('job_runs').max<{ max: number | null }>('id as max').first())?.max ?? 0);
  const startedAt = Date.now(); // wall clock: finalized_at comes from the same clock (ctx.now)
  const t0 = performance.now();
  let writeMs = 0;
  let handOverMs = 0;
  await inBatches(n, opts.batch, opts.producers, async (first, size) => {
    const jobs = Array.from({ length: size }, (_, j) => ({ kind: NOOP_KIND, payload: { i: first + j } }));
    const w0 = performance.now();
    const runs = opts.inTransaction
      ? await ctx.db.transaction((trx) => ctx.jobs.enqueueMany(trx, jobs, by))
      : await ctx.jobs.enqueueMany(ctx.db, jobs, by);
    const h0 = performance.now();
    await ctx.jobs.handOver(runs);
    writeMs += h0 - w0;
    handOverMs += performance.now() - h0;
  });
  const enqueueMs = performance.now() - t0;
  const batches = Math.ceil(n / opts.batch);
  const split = { writeMs: writeMs / batches, handOverMs: handOverMs / batches };

  let last = { done: 0, progressAt: performance.now() };
  for (;;) {
    const row = (await probe('job_runs')
      .where('id', '>', base)
      .where('kind', NOOP_KIND)
      .select(
        probe.raw('count(*) filter (where state = any(?))::int as final', [FINAL]),
        probe.raw("count(*) filter (where state = 'completed')::int as completed"),
        probe.raw('max(finalized_at) as last_at'),
      )
      .first()) as { final: number; completed: number; last_at: Date | null };
    if (row.final >= n) {
      if (row.completed !== n) throw new Error(`ours: only ${row.completed} of ${n} runs completed (${await stateCounts(probe, base)})`);
      return { n, ms: row.last_at!.getTime() - startedAt, enqueueMs, split };
    }
    if (row.final > last.done) last = { done: row.final, progressAt: performance.now() };
    else if (performance.now() - last.progressAt > 30_000) {
      throw new Error(`ours: no progress for 30 s at ${row.final}/${n} (${await stateCounts(probe, base)})`);
    }
    // The end time comes from max(finalized_at), not from when the poll sees it: polling less often
    // changes no measurement, and each poll counts up to N rows in PostgreSQL, which shares the
    // cores with what is measured (the bare side counts its completions in process, for nothing).
    await sleep(100);
  }
}

async function stateCounts(probe: Knex, base: number): Promise<string> {
  const rows = (await probe('job_runs').where('id', '>', base).select('state').count('* as c').groupBy('state')) as { state: string; c: number }[];
  return rows.map((r) => `${r.state}: ${r.c}`).join(', ');
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
