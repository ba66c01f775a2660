// Bare BullMQ: Queue.addBulk + a Worker running a no-op, same Redis and concurrency as our 'default'
// queue, jobs added the way our handOver adds them (one addBulk per batch, as many producer loops
// as our side; same job options where they apply).
import { Queue, Worker } from 'bullmq';
import Redis from 'ioredis';

export interface Measurement {
  n: number;
  /** From the first enqueue to the last completion. */
  ms: number;
  /** From the first enqueue to the last one handed to BullMQ (processing overlaps it). */
  enqueueMs: number;
  /** Ours: the mean time per batch of the enqueue's write (the insert and its commit) and of its hand-over to BullMQ. */
  split?: { writeMs: number; handOverMs: number };
}

export async function measureBare(opts: { redisUrl: string; prefix: string; queue: string; n: number; batch: number; producers: number; concurrency: number }): Promise<Measurement> {
  const { n, batch } = opts;
  const producer = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(opts.queue, { connection: producer, prefix: opts.prefix });
  let completed = 0;
  let failed = 0;
  let finish: (ms: number) => void = () => undefined;
  let fail: (err: Error) => void = () => undefined;
  const done = new Promise<number>((resolve, reject) => ((finish = resolve), (fail = reject)));
  const worker = new Worker(opts.queue, async () => undefined, {
    connection: { url: opts.redisUrl, maxRetriesPerRequest: null } as any,
    prefix: opts.prefix,
    concurrency: opts.concurrency,
  });
  worker.on('completed', () => {
    if (++completed === n) finish(performance.now());
  });
  worker.on('failed', (_job, err) => {
    failed++;
    fail(new Error(`bare: a job failed: ${err.message}`));
  });
  worker.on('error', (err) => fail(err));
  try {
    await worker.waitUntilReady();
    const t0 = performance.now();
    await inBatches(n, batch, opts.producers, (first, size) =>
      queue.addBulk(
        Array.from({ length: size }, (_, j) => ({ name: 'noop', data: { i: first + j }, opts: { jobId: `b${first + j}`, removeOnComplete: true, removeOnFail: true } })),
      ),
    );
    const enqueueMs = performance.now() - t0;
    const timeout = setTimeout(() => fail(new Error(`bare: timed out at ${completed}/${n} completed, ${failed} failed`)), 60_000 + n * 10);
    try {
      return { n, ms: (await done) - t0, enqueueMs };
    } finally {
      clearTimeout(timeout);
    }
  } finally {
    await worker.close();
    await queue.close();
    producer.disconnect();
  }
}

/** Splits `n` items into batches and runs them with `producers` loops, each taking the next batch. */
export async function inBatches(n: number, batch: number, producers: number, run: (first: number, size: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: producers }, async () => {
      while (next < n) {
        const first = next;
        next += batch;
        await run(first, Math.min(batch, n - first));
      }
    }),
  );
}
