import { condition } from '@temporalio/workflow';

/**
 * Runs `work` over `items` with at most `limit` in flight, in item order, and returns the results
 * in item order. Deterministic: starts depend only on completions, which the history orders.
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let inFlight = 0;
  let failure: unknown;
  const running: Promise<void>[] = [];
  for (let i = 0; i < items.length; i++) {
    await condition(() => inFlight < limit || failure !== undefined);
    if (failure !== undefined) break;
    inFlight++;
    running.push(
      work(items[i]!, i).then(
        (result) => {
          results[i] = result;
          inFlight--;
        },
        (error: unknown) => {
          failure ??= error;
          inFlight--;
        },
      ),
    );
  }
  await Promise.all(running);
  if (failure !== undefined) throw failure;
  return results;
}
