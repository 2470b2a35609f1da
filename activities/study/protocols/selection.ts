/**
 * Embedding-based response selection (seed §7.1, after DEITA's diversity criterion): from a
 * question's pool of accepted responses, pick `r` that are far apart in embedding space. Greedy
 * farthest-point selection in cosine distance, started from the first accepted response, so that
 * r = 1 (the first accepted) and r = |pool| (all of them) are exactly the RS sets by construction.
 */
import { ProtocolInputError } from '../errors.js';

/** Cosine distance 1 − a·b / (|a||b|), in [0, 2]. */
export function cosineDistance(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) {
    throw new ProtocolInputError('cosineDistance', `vectors of ${a.length} and ${b.length} dimensions`);
  }
  let dot = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i += 1) {
    dot += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  if (aa === 0 || bb === 0) throw new ProtocolInputError('cosineDistance', 'a zero vector has no direction');
  return 1 - dot / Math.sqrt(aa * bb);
}

function checkPool(embeddings: readonly (readonly number[])[]): void {
  const dimensions = embeddings[0]?.length ?? 0;
  embeddings.forEach((embedding, index) => {
    if (embedding.length !== dimensions || dimensions === 0) {
      throw new ProtocolInputError(
        'selectDiverseResponses',
        `embedding ${index} has ${embedding.length} dimensions, expected ${dimensions || 'at least 1'}`,
      );
    }
    if (!embedding.every(Number.isFinite)) {
      throw new ProtocolInputError('selectDiverseResponses', `embedding ${index} has a non-finite component`);
    }
    if (embedding.every((x) => x === 0)) {
      throw new ProtocolInputError('selectDiverseResponses', `embedding ${index} is the zero vector`);
    }
  });
}

/**
 * Picks `r` responses of a pool given their embeddings in pool (acceptance) order, and returns
 * their pool indices in pool order.
 *
 * Greedy farthest-point: start with response 0; then repeatedly add the response whose cosine
 * distance to its nearest selected response is largest, ties broken by the lower pool index.
 * Deterministic; the greedy sets are nested (the pick for r is a prefix of the pick for r + 1).
 * r = 1 → [0]; r ≥ |pool| → every response, as RS takes all it has when the pool is short of r.
 */
export function selectDiverseResponses(embeddings: readonly (readonly number[])[], r: number): number[] {
  if (!Number.isInteger(r) || r < 1)
    throw new ProtocolInputError('selectDiverseResponses', `r = ${r} is not a positive integer`);
  checkPool(embeddings);
  const n = embeddings.length;
  if (r >= n) return embeddings.map((_, index) => index);
  const selected = [0];
  const chosen = new Array<boolean>(n).fill(false);
  chosen[0] = true;
  // nearest[i]: cosine distance from response i to its nearest selected response.
  const nearest = embeddings.map((embedding) => cosineDistance(embedding, embeddings[0]!));
  while (selected.length < r) {
    let best = -1;
    for (let i = 0; i < n; i += 1) {
      if (!chosen[i] && (best < 0 || nearest[i]! > nearest[best]!)) best = i;
    }
    selected.push(best);
    chosen[best] = true;
    for (let i = 0; i < n; i += 1) {
      if (!chosen[i]) nearest[i] = Math.min(nearest[i]!, cosineDistance(embeddings[i]!, embeddings[best]!));
    }
  }
  return selected.sort((a, b) => a - b);
}
