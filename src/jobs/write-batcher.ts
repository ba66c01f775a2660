// Group commit for the workers' state writes. Every attempt writes its row twice (start, end); at
// concurrency N one statement per write would cost 2·N commits per round of jobs. Here a write
// waits while `maxInFlight` batches are in flight and then goes out with every other write queued
// meanwhile, in one statement: no timer, so a lone write leaves at the end of its tick and a busy
// worker writes in batches. With one batch in flight at a time the workers' rate was bound by one
// statement's latency (bench:jobs: ~95 writes per ~5 ms statement, the process mostly idle); a
// second batch in flight overlaps the round trips.

/** One write of a batch: its key (a run id) and what the caller passes with it. */
export interface BatchItem<In> {
  key: number;
  input: In;
}

type Queued<In, Out> = BatchItem<In> & { resolve: (out: Out | null) => void; reject: (err: unknown) => void };

/**
 * `flush` writes a batch in one statement and answers per key (a key missing from the answer
 * resolves to null). A key appears at most once among the batches in flight, so a conditional
 * update can never answer two callers for one row change, and two writes for one key are made in
 * the order they were asked for: a second write for a key waits until the batch holding the first
 * has been answered.
 */
export class WriteBatcher<In, Out> {
  private queued: Queued<In, Out>[] = [];
  private inFlight = 0;
  /** Keys of the batches in flight. */
  private readonly flying = new Set<number>();
  private pumpScheduled = false;

  constructor(
    private readonly flush: (items: BatchItem<In>[]) => Promise<Map<number, Out>>,
    private readonly maxBatch = 500,
    private readonly maxInFlight = 1,
  ) {}

  write(key: number, input: In): Promise<Out | null> {
    return new Promise((resolve, reject) => {
      this.queued.push({ key, input, resolve, reject });
      this.schedulePump();
    });
  }

  /**
   * Batches are formed once the current tick's promise callbacks have run (process.nextTick runs
   * after them): the writes made by the callers a batch's answer resumed (each run started goes on
   * to write its end) then leave together, where pumping at once sent the first of them alone.
   */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    process.nextTick(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /**
   * Sends batches while fewer than `maxInFlight` are in flight and some queued write may go. A batch
   * goes beside others in flight only once as many writes wait as each of those carries (a
   * statement has a fixed cost): a backlog overlaps its round trips, a trickle waits and joins.
   */
  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queued.length && (!this.inFlight || this.queued.length >= this.flying.size / this.inFlight)) {
      const batch: Queued<In, Out>[] = [];
      const later: Queued<In, Out>[] = [];
      for (const item of this.queued) {
        if (batch.length < this.maxBatch && !this.flying.has(item.key)) {
          this.flying.add(item.key);
          batch.push(item);
        } else later.push(item);
      }
      this.queued = later;
      if (!batch.length) return; // every queued key is in flight: its batch's answer pumps again
      this.inFlight++;
      void this.send(batch);
    }
  }

  private async send(batch: Queued<In, Out>[]): Promise<void> {
    try {
      const answers = await this.flush(batch.map(({ key, input }) => ({ key, input })));
      for (const item of batch) item.resolve(answers.get(item.key) ?? null);
    } catch (err) {
      for (const item of batch) item.reject(err);
    } finally {
      for (const item of batch) this.flying.delete(item.key);
      this.inFlight--;
      this.schedulePump();
    }
  }
}
