/**
 * The worker's slots for sandboxed runs (issue 33): at most `size` programs run at once; the rest
 * wait in order, so a GRPO iteration's hundreds of `python` calls cannot together take more of the
 * host than `size` runs' caps. The wait is a metric (mockworld_sandbox_queue_wait_seconds), and a
 * cancelled call leaves the queue at once.
 */
import { sandboxQueueWait, sandboxRuns } from '../telemetry/metrics.js';

export class RunSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {}

  /** Waits for a slot (rejecting with the signal's reason when cancelled first); returns its release. */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    const queuedAt = performance.now();
    if (this.running >= this.size) {
      sandboxRuns.inc({ state: 'queued' });
      try {
        await new Promise<void>((resolve, reject) => {
          const turn = () => {
            signal?.removeEventListener('abort', leave);
            resolve();
          };
          const leave = () => {
            this.waiting.splice(this.waiting.indexOf(turn), 1);
            reject(signal!.reason);
          };
          this.waiting.push(turn);
          signal?.addEventListener('abort', leave, { once: true });
        });
      } finally {
        sandboxRuns.dec({ state: 'queued' });
      }
    } else this.running++;
    sandboxQueueWait.observe((performance.now() - queuedAt) / 1000);
    sandboxRuns.inc({ state: 'running' });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      sandboxRuns.dec({ state: 'running' });
      const next = this.waiting.shift();
      if (next)
        next(); // the slot passes on: `running` stays
      else this.running--;
    };
  }
}
