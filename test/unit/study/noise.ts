/** Seeded noise for the study-analysis tests: the same seed always gives the same curve. */
import { mulberry32 } from '../../../activities/training/sampling.js';

/** A seeded uniform stream in [0, 1). */
export const uniform = mulberry32;

/** Standard normal draws (Box–Muller) from a seeded uniform stream. */
export function gaussian(seed: number): () => number {
  const next = uniform(seed);
  return () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
}
