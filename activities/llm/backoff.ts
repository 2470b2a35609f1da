/** How long to wait between attempts when the endpoint does not say. */
export interface BackoffOptions {
  /** Delay before the first retry, in ms, before jitter. Default 500. */
  readonly baseDelayMs?: number;
  /** Upper bound of a computed delay, in ms. Default 30 000. */
  readonly maxDelayMs?: number;
  /** Upper bound of a delay asked by the endpoint (Retry-After), in ms. Default 300 000. */
  readonly maxRetryAfterMs?: number;
}

/**
 * Exponential backoff with "equal jitter": half of the doubled delay is fixed, half random, so
 * callers that failed together do not retry together, yet every wait grows.
 * `retry` counts from 1 (the wait before the second attempt).
 */
export function backoffDelayMs(retry: number, options: BackoffOptions = {}, random = Math.random): number {
  const base = options.baseDelayMs ?? 500;
  const cap = options.maxDelayMs ?? 30_000;
  const ceiling = Math.min(cap, base * 2 ** Math.max(0, retry - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * The wait an endpoint asked for, in ms: `retry-after-ms` (OpenAI's), else `Retry-After` as
 * seconds or as an HTTP date. Undefined when absent or unreadable.
 */
export function retryAfterMs(
  headers: { get(name: string): string | null } | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const millis = headers.get('retry-after-ms');
  if (millis !== null && millis.trim() !== '') {
    const value = Number(millis);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const header = headers.get('retry-after');
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Sleeps `ms`; rejects with `signal.reason` as soon as the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
