import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { z } from 'zod';
import type { BenchmarkProblem } from '../benchmark-file.js';

/** One policy turn as a family sees it: its text; tokens and the transcript are kept by the runner. */
export interface PolicyReply {
  readonly text: string;
  readonly finishReason: string;
}

/** What a family's trial gets: the problem, its settings, and the policy to ask. */
export interface LocalTrialContext<S> {
  readonly problem: BenchmarkProblem;
  readonly settings: S;
  /** Asks the policy (cached in the model ledger: a retried trial pays nothing twice). */
  readonly ask: (messages: ChatCompletionMessageParam[]) => Promise<PolicyReply>;
}

/** A scored trial: its reward in [0, 1] and why, in a line. */
export interface LocalTrialScore {
  readonly reward: number;
  readonly detail: string;
}

/**
 * A benchmark family that reads the user's JSONL files ({"id"?, "question", "answer",
 * "aliases"?}) and runs on the CPU worker: how one (problem, trial) is played and scored (its
 * settings schema is registered in schemas/local-benchmarks.ts). Listing, storing exactly once, versions and metrics are the runner's
 * (../local-benchmark.ts).
 */
export interface LocalBenchmark<S extends z.ZodType> {
  /** Plays and scores one (problem, trial); the settings are parsed by the family's schema. */
  runTrial(context: LocalTrialContext<z.output<S>>): Promise<LocalTrialScore>;
}
