interface Flight<T> {
  readonly promise: Promise<T>;
  readonly controller: AbortController;
  waiters: number;
}

/**
 * Coalesces concurrent work with the same key in one process: the first caller starts it, later
 * callers wait for the same promise. The work gets its own signal, aborted only when every caller
 * waiting for it has aborted, so one caller's cancellation never fails the others.
 */
export class SingleFlight<T> {
  private readonly flights = new Map<string, Flight<T>>();

  /** Number of keys with work in progress. */
  get size(): number {
    return this.flights.size;
  }

  /**
   * Runs `work` for `key`, or joins the run in progress. `shared` is true for callers that joined.
   * Rejects with `signal.reason` when this caller's signal aborts, whatever the work does.
   */
  run(
    key: string,
    work: (signal: AbortSignal) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<{ value: T; shared: boolean }> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    let flight = this.flights.get(key);
    // A flight whose callers all left is being cancelled: start afresh instead of joining it.
    const shared = flight !== undefined && !flight.controller.signal.aborted;
    if (!shared) {
      const controller = new AbortController();
      const started: Flight<T> = {
        controller,
        waiters: 0,
        promise: Promise.resolve()
          .then(() => work(controller.signal))
          .finally(() => {
            if (this.flights.get(key) === started) this.flights.delete(key);
          }),
      };
      flight = started;
      this.flights.set(key, flight);
    }
    const joined = flight!;
    joined.waiters += 1;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        joined.waiters -= 1;
        if (joined.waiters === 0) joined.controller.abort(signal!.reason);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      joined.promise.then(
        (value) => {
          signal?.removeEventListener('abort', onAbort);
          resolve({ value, shared });
        },
        (error: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
  }
}
