import { describe, expect, it } from 'vitest';
import { Batcher } from '../../../activities/llm/batcher.js';

/** A batch statement that takes `ms` and records the batches it was given. */
function recorder(ms: number) {
  const batches: number[][] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const run = async (items: number[]): Promise<Array<PromiseSettledResult<number>>> => {
    batches.push(items);
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    await new Promise((resolve) => setTimeout(resolve, ms));
    inFlight--;
    return items.map((item) =>
      item < 0
        ? { status: 'rejected', reason: new Error(`bad ${item}`) }
        : { status: 'fulfilled', value: item * 10 },
    );
  };
  return { run, batches, maxInFlight: () => maxInFlight };
}

describe('Batcher (group commit of ledger statements)', () => {
  it('sends a lone item at once, in a batch of its own', async () => {
    const { run, batches } = recorder(5);
    const batcher = new Batcher(run, { maxBatch: 128, maxInFlight: 2 });
    expect(await batcher.submit(1)).toBe(10);
    expect(batches).toEqual([[1]]);
  });

  it('groups what queues behind the batches in flight, never more than maxInFlight at once', async () => {
    const { run, batches, maxInFlight } = recorder(20);
    const batcher = new Batcher(run, { maxBatch: 128, maxInFlight: 2 });
    const first = batcher.submit(0);
    await new Promise((resolve) => setTimeout(resolve, 1)); // the first batch is in flight
    const rest = Array.from({ length: 100 }, (_, i) => batcher.submit(i + 1));
    expect(await Promise.all([first, ...rest])).toEqual(Array.from({ length: 101 }, (_, i) => i * 10));
    expect(maxInFlight()).toBeLessThanOrEqual(2);
    expect(batches.length).toBeLessThanOrEqual(3);
    expect(batches.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 101 }, (_, i) => i));
  });

  it('splits a queue longer than maxBatch', async () => {
    const { run, batches } = recorder(5);
    const batcher = new Batcher(run, { maxBatch: 10, maxInFlight: 1 });
    await Promise.all(Array.from({ length: 25 }, (_, i) => batcher.submit(i)));
    expect(batches.map((b) => b.length)).toEqual([10, 10, 5]);
  });

  it('fails only the items that failed, and every item of a batch whose statement failed', async () => {
    const { run } = recorder(1);
    const batcher = new Batcher(run, { maxBatch: 128, maxInFlight: 1 });
    const settled = await Promise.allSettled([batcher.submit(1), batcher.submit(-1), batcher.submit(2)]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);

    const down = new Batcher<number, number>(async () => Promise.reject(new Error('connection lost')), {
      maxBatch: 128,
      maxInFlight: 1,
    });
    const all = await Promise.allSettled([down.submit(1), down.submit(2)]);
    expect(all.map((s) => (s.status === 'rejected' ? (s.reason as Error).message : 'ok'))).toEqual([
      'connection lost',
      'connection lost',
    ]);
  });
});
