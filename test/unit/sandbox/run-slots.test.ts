import { describe, expect, it } from 'vitest';
import { RunSlots } from '../../../activities/sandbox/run-slots.js';
import { metricsRegistry } from '../../../activities/telemetry/metrics.js';

/** The value of `mockworld_sandbox_runs{state}` now. */
async function runs(state: 'running' | 'queued'): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric('mockworld_sandbox_runs')!.get();
  return metric.values.find((v) => v.labels.state === state)?.value ?? 0;
}

describe('RunSlots', () => {
  it('runs at most `size` at once, hands slots on in order, and counts the queue', async () => {
    const slots = new RunSlots(2);
    const order: number[] = [];
    const releases = await Promise.all([slots.acquire(), slots.acquire()]);
    const waiting = [2, 3].map((n) => slots.acquire().then((release) => (order.push(n), release)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    expect(await runs('running')).toBe(2);
    expect(await runs('queued')).toBe(2);
    releases[0]!();
    releases[0]!(); // a second release of the same slot is ignored
    const third = await waiting[0]!;
    expect(order).toEqual([2]);
    expect(await runs('queued')).toBe(1);
    releases[1]!();
    (await waiting[1]!)();
    third();
    expect(order).toEqual([2, 3]);
    expect(await runs('running')).toBe(0);
    expect(await runs('queued')).toBe(0);
  });

  it('lets a cancelled caller leave the queue at once, and the slot goes to the next', async () => {
    const slots = new RunSlots(1);
    const held = await slots.acquire();
    const controller = new AbortController();
    const cancelled = slots.acquire(controller.signal);
    const next = slots.acquire();
    controller.abort(new Error('run cancelled'));
    await expect(cancelled).rejects.toThrow('run cancelled');
    held();
    (await next)();
    expect(await runs('queued')).toBe(0);
    await expect(slots.acquire(AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
  });
});
