/**
 * Deterministic task sampling for GRPO iterations (seed §3.4, App. A: a global batch of tasks per
 * iteration, several epochs over the training tasks). Pure functions of the seed: a retried or
 * replayed plan picks exactly the same tasks.
 */

/** Stream label of the held-out split (mixed into the seed so it never equals an epoch's). */
const HELD_OUT_STREAM = 0x48_4f_4c_44; // "HOLD"
/** Stream label of the per-epoch permutations. */
const EPOCH_STREAM = 0x45_50_4f_43; // "EPOC"

/**
 * mulberry32 (Tommy Ettinger, public domain): a 32-bit-state PRNG, uniform in [0, 1). Small and
 * fast; enough for shuffling, not for cryptography.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The murmur3 finalizer: spreads every input bit over the 32-bit result. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * One 32-bit seed from non-negative integers (spec seed, stream label, epoch), so that nearby
 * seeds and epochs give unrelated permutations. Integers above 2^32 keep their high bits.
 */
export function mixSeed(...parts: readonly number[]): number {
  let h = 0x9e3779b9;
  for (const part of parts) {
    if (!Number.isSafeInteger(part) || part < 0)
      throw new RangeError(`seed part must be a non-negative safe integer, got ${part}`);
    h = fmix32(h ^ (part >>> 0));
    h = fmix32(h ^ (Math.floor(part / 4_294_967_296) >>> 0));
  }
  return h;
}

/** A Fisher–Yates shuffle of a copy of `items` driven by {@link mulberry32}(`seed`). */
export function seededShuffle<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  const random = mulberry32(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The kept tasks split into a held-out evaluation set and a training set. */
export interface HeldOutSplit<T> {
  /** The first `heldOut` items of the seeded shuffle, in shuffled order. */
  readonly heldOut: T[];
  /** Every other item, in the given order (the canonical order the epochs permute). */
  readonly train: T[];
}

/**
 * Holds out `heldOut` items chosen by a seeded shuffle; they are never trained on. Throws a
 * RangeError when more are held out than there are items.
 */
export function splitHeldOut<T>(items: readonly T[], heldOut: number, seed: number): HeldOutSplit<T> {
  if (!Number.isInteger(heldOut) || heldOut < 0 || heldOut > items.length) {
    throw new RangeError(`cannot hold out ${heldOut} of ${items.length} tasks`);
  }
  const chosen = new Set(
    seededShuffle(
      items.map((_, i) => i),
      mixSeed(seed, HELD_OUT_STREAM),
    ).slice(0, heldOut),
  );
  const ordered = [...chosen];
  return {
    heldOut: ordered.map((i) => items[i]!),
    train: items.filter((_, i) => !chosen.has(i)),
  };
}

/** The tasks of one iteration and where it lies in the epochs. */
export interface IterationSlice<T> {
  readonly items: T[];
  /** 0-based epoch of the iteration. */
  readonly epoch: number;
  /** Iterations per epoch: ceil(trainSize / globalBatch). */
  readonly iterationsPerEpoch: number;
}

/**
 * The `globalBatch` training items of 0-based `iteration`. Each epoch is a fresh seeded
 * permutation of the training set cut into ceil(N / B) consecutive slices; a last, short slice
 * is filled up from the start of the same permutation (as torch's DistributedSampler pads), so
 * every iteration has exactly B distinct items and every epoch covers every item at least once
 * (exactly once when B divides N). Throws a RangeError when B > N: an iteration would have to
 * repeat a task, which merges two GRPO groups.
 */
export function iterationSlice<T>(
  train: readonly T[],
  globalBatch: number,
  iteration: number,
  seed: number,
): IterationSlice<T> {
  const n = train.length;
  if (!Number.isInteger(globalBatch) || globalBatch < 1)
    throw new RangeError(`globalBatch must be >= 1, got ${globalBatch}`);
  if (!Number.isInteger(iteration) || iteration < 0)
    throw new RangeError(`iteration must be >= 0, got ${iteration}`);
  if (globalBatch > n) throw new RangeError(`globalBatch (${globalBatch}) exceeds the ${n} training tasks`);
  const iterationsPerEpoch = Math.ceil(n / globalBatch);
  const epoch = Math.floor(iteration / iterationsPerEpoch);
  const start = (iteration % iterationsPerEpoch) * globalBatch;
  const permutation = seededShuffle(train, mixSeed(seed, EPOCH_STREAM, epoch));
  const items = Array.from({ length: globalBatch }, (_, k) => permutation[(start + k) % n]!);
  return { items, epoch, iterationsPerEpoch };
}
