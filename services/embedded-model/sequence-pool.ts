/** The chat sequences of the embedded model's contexts, leased to requests one at a time. */
import type { LlamaContextSequence } from 'node-llama-cpp';
import { ApiError } from './errors.js';

/**
 * Leases context sequences to requests in arrival order, each from the context with the fewest
 * sequences leased (so that 2 requests on 2 contexts decode on 2 cores).
 */
export class SequencePool {
  private readonly waiting: { resolve: (s: LlamaContextSequence) => void; reject: (e: unknown) => void }[] =
    [];
  private closed = false;
  /** Free sequences per context. */
  private readonly free: LlamaContextSequence[][];
  private readonly contextOf = new Map<LlamaContextSequence, number>();
  private readonly leased: number[];

  constructor(sequences: LlamaContextSequence[][]) {
    this.free = sequences.map((list) => [...list]);
    this.leased = sequences.map(() => 0);
    sequences.forEach((list, index) => list.forEach((sequence) => this.contextOf.set(sequence, index)));
  }

  private take(): LlamaContextSequence | undefined {
    let best = -1;
    for (let index = 0; index < this.free.length; index++) {
      if (this.free[index]!.length > 0 && (best < 0 || this.leased[index]! < this.leased[best]!))
        best = index;
    }
    if (best < 0) return undefined;
    this.leased[best]!++;
    return this.free[best]!.pop();
  }

  acquire(signal?: AbortSignal): Promise<LlamaContextSequence> {
    if (this.closed) return Promise.reject(new ApiError(503, 'The embedded model is shutting down.'));
    signal?.throwIfAborted();
    const sequence = this.take();
    if (sequence) return Promise.resolve(sequence);
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (s: LlamaContextSequence) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(s);
        },
        reject,
      };
      const onAbort = () => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  release(sequence: LlamaContextSequence): void {
    const index = this.contextOf.get(sequence)!;
    this.leased[index]!--;
    this.free[index]!.push(sequence);
    const next = this.waiting.shift();
    if (next) next.resolve(this.take()!);
  }

  close(): void {
    this.closed = true;
    for (const waiter of this.waiting.splice(0))
      waiter.reject(new ApiError(503, 'The embedded model is shutting down.'));
  }
}
