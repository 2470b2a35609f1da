/**
 * Group commit for one kind of single-row statement: items submitted while `maxInFlight` batches
 * are already running wait for the next one, and go together in one statement (one round trip,
 * one commit). A lone caller is sent at once, so batching adds no wait when the database keeps
 * up; under load a batch holds everything that queued behind the last one.
 *
 * `run` settles each item by its position (one bad row need not fail its neighbours). When `run`
 * itself fails, every item of the batch fails with that error: the statements batched here are
 * idempotent, so callers retry them as they would a single statement.
 */
export class Batcher<In, Out> {
  private queue: Array<{ item: In; resolve: (out: Out) => void; reject: (error: unknown) => void }> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly run: (items: In[]) => Promise<Array<PromiseSettledResult<Out>>>,
    private readonly options: { readonly maxBatch: number; readonly maxInFlight: number },
  ) {}

  submit(item: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Flushes after the current microtasks, so callers submitting in the same turn share a batch. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.inFlight >= this.options.maxInFlight || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.options.maxBatch);
    this.inFlight++;
    this.run(batch.map((entry) => entry.item))
      .then(
        (outs) =>
          batch.forEach((entry, i) => {
            const out = outs[i]!;
            if (out.status === 'fulfilled') entry.resolve(out.value);
            else entry.reject(out.reason);
          }),
        (error: unknown) => batch.forEach((entry) => entry.reject(error)),
      )
      .finally(() => {
        this.inFlight--;
        this.schedule();
      });
  }
}
