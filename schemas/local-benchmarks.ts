import { z } from 'zod';
import { ExactAnswerSettingsSchema } from './benchmarks/exact-answer.js';

/**
 * Benchmark families that read the user's JSONL files and run on the CPU worker through the
 * benchmark registry (activities/evaluation/benchmarks). Each registers its settings here, under
 * the name a spec uses (`benchmarks.<name>`), and its trial in the activities' registry; the
 * Evaluation workflow plans, lists and runs them without knowing any family by name.
 * docs/adding-a-benchmark.md walks through adding one.
 */
export const LOCAL_BENCHMARK_SETTINGS = {
  exact: ExactAnswerSettingsSchema,
} as const;

export type LocalBenchmarkName = keyof typeof LOCAL_BENCHMARK_SETTINGS;
export const LOCAL_BENCHMARK_NAMES = Object.keys(LOCAL_BENCHMARK_SETTINGS) as LocalBenchmarkName[];
export const LocalBenchmarkNameSchema = z.enum(LOCAL_BENCHMARK_NAMES as [LocalBenchmarkName]);
