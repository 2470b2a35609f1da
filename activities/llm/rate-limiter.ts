import type { ModelEndpoint } from '../../schemas/model-endpoint.js';
import { normalizeBaseUrl } from './cache-key.js';

/**
 * A bucket refilled continuously at `perMinute / 60` units per second that holds at most one
 * second of refill. The small burst spreads a per-minute budget evenly instead of spending it in
 * the first instant and then stalling for a minute, which is also how providers enforce such
 * limits. A cost above the capacity is admitted when the bucket is full and leaves it in debt, so
 * one large request can never wait forever while the long-run rate still holds.
 */
export class TokenBucket {
  private level: number;
  private updatedAt = Date.now();
  private capacity: number;
  private perMs: number;

  constructor(perMinute: number) {
    this.capacity = Math.max(1, perMinute / 60);
    this.perMs = perMinute / 60_000;
    this.level = this.capacity;
  }

  /** Changes the rate; the current level is kept (clamped to the new capacity). */
  setRate(perMinute: number): void {
    this.refill();
    this.capacity = Math.max(1, perMinute / 60);
    this.perMs = perMinute / 60_000;
    this.level = Math.min(this.level, this.capacity);
  }

  /** Milliseconds until `cost` can be taken; 0 when it can be taken now. */
  waitMs(cost: number): number {
    this.refill();
    const needed = Math.min(cost, this.capacity);
    return this.level >= needed ? 0 : Math.ceil((needed - this.level) / this.perMs);
  }

  /** Takes `cost` units (the level may go negative: debt paid back by refill). */
  take(cost: number): void {
    this.refill();
    this.level -= cost;
  }

  /** Gives back (positive) or charges (negative) units once the true cost is known. */
  adjust(delta: number): void {
    this.refill();
    this.level = Math.min(this.capacity, this.level + delta);
  }

  private refill(): void {
    const now = Date.now();
    this.level = Math.min(this.capacity, this.level + (now - this.updatedAt) * this.perMs);
    this.updatedAt = now;
  }
}

/** The limits of one endpoint, as declared in its spec. */
export type LimiterSettings = Pick<ModelEndpoint, 'maxConcurrency' | 'requestsPerMinute' | 'tokensPerMinute'>;

/** An admitted request; `release` must be called exactly once when its HTTP attempt is over. */
export interface Permit {
  /** Frees the concurrency slot; with the real token count, corrects the token estimate. */
  release(actualTokens?: number): void;
}

interface Waiter {
  readonly tokens: number;
  readonly admit: (permit: Permit) => void;
}

/**
 * Admission control for one endpoint in one process: at most `maxConcurrency` requests in flight,
 * requests/min and tokens/min buckets, and a pause after a 429 so that every caller honours the
 * endpoint's Retry-After, not only the one that received it. Waiters are admitted first in, first
 * out, so a large request is not starved by a stream of small ones.
 */
export class EndpointLimiter {
  private inFlightCount = 0;
  private readonly queue: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private pausedUntil = 0;
  private maxConcurrency: number;
  private requests: TokenBucket | undefined;
  private tokens: TokenBucket | undefined;

  constructor(settings: LimiterSettings) {
    this.maxConcurrency = settings.maxConcurrency;
    this.configure(settings);
  }

  /** Requests holding a permit now. */
  get inFlight(): number {
    return this.inFlightCount;
  }

  /** Requests waiting for a permit now. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Applies the endpoint's current limits (the latest spec wins when two runs share an endpoint). */
  configure(settings: LimiterSettings): void {
    this.maxConcurrency = settings.maxConcurrency;
    this.requests = updateBucket(this.requests, settings.requestsPerMinute);
    this.tokens = updateBucket(this.tokens, settings.tokensPerMinute);
  }

  /**
   * Waits until a request estimated at `estimatedTokens` may be sent. Rejects with
   * `signal.reason` if the signal aborts first.
   */
  acquire(estimatedTokens: number, signal?: AbortSignal): Promise<Permit> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Permit>((resolve, reject) => {
      const onAbort = () => {
        const index = this.queue.indexOf(waiter);
        if (index >= 0) this.queue.splice(index, 1);
        reject(signal!.reason);
        this.pump();
      };
      const waiter: Waiter = {
        tokens: estimatedTokens,
        admit: (permit) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(permit);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
      this.pump();
    });
  }

  /** Holds every admission for `ms` (an endpoint said Retry-After). */
  pause(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms);
  }

  private pump(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.queue.length > 0) {
      if (this.inFlightCount >= this.maxConcurrency) return; // a release pumps again
      const head = this.queue[0]!;
      const wait = Math.max(
        this.pausedUntil - Date.now(),
        this.requests?.waitMs(1) ?? 0,
        this.tokens?.waitMs(head.tokens) ?? 0,
      );
      if (wait > 0) {
        this.timer = setTimeout(() => this.pump(), wait);
        return;
      }
      this.queue.shift();
      this.inFlightCount += 1;
      this.requests?.take(1);
      this.tokens?.take(head.tokens);
      head.admit(this.permit(head.tokens));
    }
  }

  private permit(estimatedTokens: number): Permit {
    let released = false;
    return {
      release: (actualTokens?: number) => {
        if (released) return;
        released = true;
        this.inFlightCount -= 1;
        if (actualTokens !== undefined) this.tokens?.adjust(estimatedTokens - actualTokens);
        this.pump();
      },
    };
  }
}

function updateBucket(
  bucket: TokenBucket | undefined,
  perMinute: number | undefined,
): TokenBucket | undefined {
  if (perMinute === undefined) return undefined;
  if (!bucket) return new TokenBucket(perMinute);
  bucket.setRate(perMinute);
  return bucket;
}

const limiters = new Map<string, EndpointLimiter>();

/**
 * The limiter of an endpoint (base URL + model) in this process, shared by every client instance,
 * so the caps hold per worker whatever number of activities run at once.
 */
export function limiterFor(endpoint: ModelEndpoint): EndpointLimiter {
  const key = `${normalizeBaseUrl(endpoint.baseUrl)}\n${endpoint.model}`;
  let limiter = limiters.get(key);
  if (!limiter) {
    limiter = new EndpointLimiter(endpoint);
    limiters.set(key, limiter);
  } else {
    limiter.configure(endpoint);
  }
  return limiter;
}

/**
 * Tokens a request may use, known before sending it: the completion budget plus prompt characters
 * divided by four (a common rough ratio for English text and JSON).
 */
export function estimateTokens(maxTokens: number, promptChars: number): number {
  return maxTokens + Math.ceil(promptChars / 4);
}
