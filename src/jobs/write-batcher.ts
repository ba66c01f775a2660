// Group commit for the workers' state writes. Every attempt writes its row twice (start, end); at
// concurrency N one statement per write would cost 2·N commits per round of jobs. Here a write
// waits while one batch is in flight and then goes out with every other write queued meanwhile,
// in one statement: no timer, so a lone write leaves at once and a busy worker writes in batches.

/** One write of a batch: its key (a run id) and what the caller passes with it. */
export interface BatchItem<In> {
  key: number;
  input: In;
}

/**
 * `flush` writes a batch in one statement and answers per key (a key missing from the answer
 * resolves to null). A key appears at most once per batch, so a conditional update can never
 * answer two callers for one row change: a second write for a key waits for the next batch.
 */
export class WriteBatcher<In, Out> {
  private queued: (BatchItem<In> & { resolve: (out: Out | null) => void; reject: (err: unknown) => void })[] = [];
  private inFlight = false;

  constructor(
    private readonly flush: (items: BatchItem<In>[]) => Promise<Map<number, Out>>,
    private readonly maxBatch = 500,
  ) {}

  write(key: number, input: In): Promise<Out | null> {
    return new Promise((resolve, reject) => {
      this.queued.push({ key, input, resolve, reject });
      if (!this.inFlight) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.inFlight = true;
    try {
      while (this.queued.length) {
        const batch: typeof this.queued = [];
        const later: typeof this.queued = [];
        const keys = new Set<number>();
        for (const item of this.queued) {
          if (batch.length < this.maxBatch && !keys.has(item.key)) {
            keys.add(item.key);
            batch.push(item);
          } else later.push(item);
        }
        this.queued = later;
        try {
          const answers = await this.flush(batch.map(({ key, input }) => ({ key, input })));
          for (const item of batch) item.resolve(answers.get(item.key) ?? null);
        } catch (err) {
          for (const item of batch) item.reject(err);
        }
      }
    } finally {
      this.inFlight = false;
    }
  }
}
