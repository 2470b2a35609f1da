/**
 * The benchmark registry of the CPU worker's file benchmarks: one entry per family of
 * schemas/local-benchmarks.ts (the compiler holds the two in step). Adding a family is a settings
 * schema there and a module here (docs/adding-a-benchmark.md).
 */
import { LOCAL_BENCHMARK_SETTINGS, type LocalBenchmarkName } from '../../../schemas/local-benchmarks.js';
import { exactAnswer } from './exact-answer.js';
import type { LocalBenchmark } from './family.js';

export const LOCAL_BENCHMARKS: {
  readonly [K in LocalBenchmarkName]: LocalBenchmark<(typeof LOCAL_BENCHMARK_SETTINGS)[K]>;
} = {
  exact: exactAnswer,
};

export type { LocalBenchmark, LocalTrialContext, LocalTrialScore, PolicyReply } from './family.js';
