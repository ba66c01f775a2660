import { WriteBatcher, type BatchItem } from '../../src/jobs/write-batcher';

/** A flush that records each batch and answers when the test releases it. */
function recordingFlush() {
  const batches: BatchItem<string>[][] = [];
  const releases: (() => void)[] = [];
  const flush = (items: BatchItem<string>[]) => {
    batches.push(items);
    return new Promise<Map<number, string>>((resolve) => {
      releases.push(() => resolve(new Map(items.map(({ key, input }) => [key, `${input}!`]))));
    });
  };
  const release = async () => {
    releases.shift()!();
    await new Promise((r) => setImmediate(r));
  };
  return { batches, flush, release };
}

/** The end of the current tick, when a batcher forms its batch. */
const tick = () => new Promise<void>((resolve) => process.nextTick(resolve));

describe('WriteBatcher', () => {
  it('sends the writes of one tick as one batch, and those made while it is in flight as the next', async () => {
    const { batches, flush, release } = recordingFlush();
    const batcher = new WriteBatcher(flush);
    const first = [batcher.write(1, 'a'), batcher.write(2, 'b')];
    expect(batches).toEqual([]); // at the end of the tick, not at once
    await tick();
    expect(batches.map((b) => b.map((i) => i.key))).toEqual([[1, 2]]);
    const rest = [batcher.write(3, 'c'), batcher.write(4, 'd')];
    await tick();
    expect(batches.map((b) => b.map((i) => i.key))).toEqual([[1, 2]]); // one batch in flight at a time
    await release();
    expect(await Promise.all(first)).toEqual(['a!', 'b!']);
    expect(batches.map((b) => b.map((i) => i.key))).toEqual([[1, 2], [3, 4]]);
    await release();
    expect(await Promise.all(rest)).toEqual(['c!', 'd!']);
  });

  it('sends the writes of the callers a batch answer resumed together', async () => {
    const { batches, flush, release } = recordingFlush();
    const batcher = new WriteBatcher(flush);
    const ends = [1, 2, 3].map((key) => batcher.write(key, 'start').then(() => batcher.write(key, 'end')));
    await tick();
    await release(); // each start answered: each caller writes its end
    expect(batches.map((b) => b.map((i) => `${i.key}:${i.input}`))).toEqual([
      ['1:start', '2:start', '3:start'],
      ['1:end', '2:end', '3:end'],
    ]);
    await release();
    expect(await Promise.all(ends)).toEqual(['end!', 'end!', 'end!']);
  });

  it('never puts one key twice in a batch, and caps the batch size', async () => {
    const { batches, flush, release } = recordingFlush();
    const batcher = new WriteBatcher(flush, 2);
    const writes = [batcher.write(9, 'x'), batcher.write(1, 'a'), batcher.write(1, 'b'), batcher.write(2, 'c'), batcher.write(3, 'd')];
    await tick();
    await release();
    await release();
    await release();
    expect(batches.map((b) => b.map((i) => i.input))).toEqual([['x', 'a'], ['b', 'c'], ['d']]);
    expect(await Promise.all(writes)).toEqual(['x!', 'a!', 'b!', 'c!', 'd!']);
  });

  it('with two batches in flight, a second write for a key waits until the batch holding the first is answered', async () => {
    const { batches, flush, release } = recordingFlush();
    const batcher = new WriteBatcher(flush, 500, 2);
    const first = batcher.write(1, 'start');
    await tick();
    const second = batcher.write(2, 'start'); // a second batch goes beside the first
    await tick();
    const again = batcher.write(1, 'complete'); // key 1 is in flight: waits
    const third = batcher.write(3, 'start'); // two batches in flight: waits
    await tick();
    expect(batches.map((b) => b.map((i) => `${i.key}:${i.input}`))).toEqual([['1:start'], ['2:start']]);
    await release(); // the first batch answers: key 1 may go again, with 3
    expect(await first).toBe('start!');
    expect(batches.map((b) => b.map((i) => `${i.key}:${i.input}`))).toEqual([['1:start'], ['2:start'], ['1:complete', '3:start']]);
    await release();
    await release();
    expect(await Promise.all([second, again, third])).toEqual(['start!', 'complete!', 'start!']);
  });

  it('sends a batch beside one in flight only once as many writes wait as that one carries', async () => {
    const { batches, flush, release } = recordingFlush();
    const batcher = new WriteBatcher(flush, 500, 2);
    const writes = [batcher.write(1, 'a'), batcher.write(2, 'b'), batcher.write(3, 'c')];
    await tick();
    writes.push(batcher.write(4, 'd'), batcher.write(5, 'e'));
    await tick();
    expect(batches.map((b) => b.map((i) => i.key))).toEqual([[1, 2, 3]]); // two waiting: they wait for the three in flight
    writes.push(batcher.write(6, 'f'));
    await tick();
    expect(batches.map((b) => b.map((i) => i.key))).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]); // three waiting: they go beside
    await release();
    await release();
    expect(await Promise.all(writes)).toEqual(['a!', 'b!', 'c!', 'd!', 'e!', 'f!']);
  });

  it('answers null for a key the flush did not answer, and rejects a whole batch whose flush failed', async () => {
    let fail = false;
    const batcher = new WriteBatcher<string, string>(async (items) => {
      if (fail) throw new Error('database down');
      return new Map(items.filter((i) => i.key !== 2).map((i) => [i.key, i.input]));
    });
    expect(await Promise.all([batcher.write(1, 'a'), batcher.write(2, 'b')])).toEqual(['a', null]);
    fail = true;
    await expect(batcher.write(3, 'c')).rejects.toThrow('database down');
    fail = false;
    expect(await batcher.write(4, 'd')).toBe('d'); // the batcher goes on after a failed batch
  });
});
