import { MockActivityEnvironment } from '@temporalio/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  firstHeartbeatDelayMs,
  heartbeatProgress,
  withLivenessHeartbeats,
} from '../../activities/heartbeat.js';

/** A gate the test opens to let the activity go on. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

function environment(heartbeatTimeoutMs?: number) {
  const env = new MockActivityEnvironment(heartbeatTimeoutMs ? { heartbeatTimeoutMs } : {});
  const beats: unknown[] = [];
  env.on('heartbeat', (details: unknown) => beats.push(details));
  return { env, beats };
}

describe('activity heartbeats', () => {
  afterEach(() => vi.useRealTimers());

  it('sends none before half the heartbeat timeout, then the latest progress, then progress as it comes', async () => {
    vi.useFakeTimers();
    const { env, beats } = environment(20_000);
    const gates = [gate(), gate(), gate()];
    const activities = withLivenessHeartbeats({
      async play() {
        for (const [turn, g] of gates.entries()) {
          heartbeatProgress({ turn: turn + 1 });
          await g.opened;
        }
        return 'done';
      },
    });
    const run = env.run(activities.play);

    await vi.advanceTimersByTimeAsync(5_000);
    gates[0]!.open();
    await vi.advanceTimersByTimeAsync(4_999);
    expect(beats).toEqual([]); // turns 1 and 2 recorded, nothing sent

    await vi.advanceTimersByTimeAsync(1);
    expect(beats).toEqual([{ turn: 2 }]); // 10 s: the first heartbeat carries the latest progress

    gates[1]!.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(beats).toEqual([{ turn: 2 }, { turn: 3 }]); // heartbeating now: sent at once

    await vi.advanceTimersByTimeAsync(5_000);
    expect(beats).toEqual([{ turn: 2 }, { turn: 3 }, { turn: 3 }]); // liveness keeps the progress

    gates[2]!.open();
    await expect(run).resolves.toBe('done');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(beats).toHaveLength(3); // timers gone with the activity
  });

  it('sends nothing for an activity that ends well within its heartbeat timeout', async () => {
    vi.useFakeTimers();
    const { env, beats } = environment(20_000);
    const g = gate();
    const activities = withLivenessHeartbeats({
      async call() {
        heartbeatProgress({ turn: 1 });
        await g.opened;
      },
    });
    const run = env.run(activities.call);
    await vi.advanceTimersByTimeAsync(9_000);
    g.open();
    await run;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(beats).toEqual([]);
  });

  it('without a heartbeat timeout, heartbeats (for cancellation) from the first interval on', () => {
    expect(firstHeartbeatDelayMs(undefined)).toBe(5_000);
    expect(firstHeartbeatDelayMs(20_000)).toBe(10_000);
    expect(firstHeartbeatDelayMs(1)).toBe(1);
  });

  it('records nothing outside an activity', () => {
    expect(() => heartbeatProgress({ turn: 1 })).not.toThrow();
  });
});
