/**
 * The Evaluation run's activities on the CPU worker: the math and search benchmarks, held-out
 * synthetic tasks and the registered file benchmarks (benchmarks/index.ts); the official tau2 and
 * BFCL code runs on the Python evaluation worker, workers/evaluation.
 */
import type pg from 'pg';
import type { ListTasksResult, TrialSummary } from '../../schemas/evaluation-contract.js';
import type { ReasoningListInput, ReasoningTrialInput } from '../../schemas/reasoning-evaluation.js';
import type { ModelClient } from '../llm/index.js';
import { DEFAULT_SANDBOX_VENV, locateSandbox, type SandboxInstall } from '../sandbox/install.js';
import { getPool } from '../store/db.js';
import { activityHooks } from '../training/index.js';
import type { SyntheticListInput, SyntheticTrialInput } from '../../schemas/synthetic-evaluation.js';
import { createEpisodeRunner } from '../world/index.js';
import { listReasoningBenchmarkTasks, runReasoningBenchmarkTrial } from './reasoning-trial.js';
import { listSyntheticBenchmarkTasks, runSyntheticBenchmarkTrial } from './synthetic-trial.js';
import { listLocalBenchmarkTasks, runLocalBenchmarkTrial } from './local-benchmark.js';
import type { LocalListInput, LocalTrialInput } from '../../schemas/local-benchmark-trial.js';

export { readBenchmarkFile } from './benchmark-file.js';
import { rubricControlTally, type RubricControlTally } from '../reward/index.js';
import { sumTallies, type ControlTally } from '../../schemas/judge-controls.js';
import { answerControlTally } from '../correctness/answer-controls.js';
export { BenchmarkFileError, EVALUATION_ERRORS, EvalJudgeFailed, EvalTrialConflict } from './errors.js';

/** The math, search and synthetic benchmark activities, bound to one database, model client and sandbox. */
export function createEvaluationActivities(
  databaseUrl: string,
  models: ModelClient,
  sandboxVenv: string = DEFAULT_SANDBOX_VENV,
) {
  let sandbox: SandboxInstall | undefined;
  const world = createEpisodeRunner({ databaseUrl, models });
  return {
    /** A math or search group's problem ids, versions and data hash. Not retryable: `BenchmarkFileError`. */
    async listReasoningBenchmarkTasks(input: ReasoningListInput): Promise<ListTasksResult> {
      return listReasoningBenchmarkTasks(input);
    },

    /**
     * One (problem, trial), exactly once, stored in eval_trials; a retry resumes its episode. Not
     * retryable: `BenchmarkFileError`, `EvalTrialConflict` (stored with other settings).
     */
    async runReasoningBenchmarkTrial(input: ReasoningTrialInput): Promise<TrialSummary> {
      const hooks = activityHooks();
      return runReasoningBenchmarkTrial(
        {
          pool: getPool(databaseUrl),
          models,
          sandbox: () => ({ install: (sandbox ??= locateSandbox(sandboxVenv)), signal: hooks.signal }),
        },
        input,
        hooks,
      );
    },

    /** The held-out tasks of a synthesis run, split as GrpoTraining splits them. Not retryable: `TrainingPlanError`. */
    async listSyntheticBenchmarkTasks(input: SyntheticListInput): Promise<ListTasksResult> {
      return listSyntheticBenchmarkTasks(getPool(databaseUrl), input);
    },

    /**
     * One (held-out task, trial) in the mock world, judged by its rubric, exactly once. Not
     * retryable: `EvalJudgeFailed` (no usable verdict), `EvalTrialConflict`.
     */
    async runSyntheticBenchmarkTrial(input: SyntheticTrialInput): Promise<TrialSummary> {
      return runSyntheticBenchmarkTrial(
        { pool: getPool(databaseUrl), models, world },
        input,
        activityHooks(),
      );
    },

    /**
     * The rubric judge's controls over every synthetic task of an evaluation so far
     * (reward/rubric-controls.ts): how far its rewards can be believed.
     */
    async syntheticJudgeControls(input: { evaluationId: string }): Promise<RubricControlTally> {
      return rubricControlTally(getPool(databaseUrl), input.evaluationId);
    },

    /**
     * The controls of an evaluation's judges so far, as one tally: the synthetic benchmark's rubric
     * judge (`rubric`) and the search benchmark's answer judge (`answer`, correctness/answer-controls.ts).
     */
    async evaluationJudgeControls(input: EvaluationJudgesInput): Promise<ControlTally> {
      return evaluationJudgeTally(getPool(databaseUrl), input);
    },

    /** A registered file benchmark's problem ids, versions and data hash. Not retryable: `BenchmarkFileError`. */
    async listLocalBenchmarkTasks(input: LocalListInput): Promise<ListTasksResult> {
      return listLocalBenchmarkTasks(input);
    },

    /**
     * One (problem, trial) of a registered file benchmark, exactly once. Not retryable:
     * `BenchmarkFileError`, `EvalTrialConflict`.
     */
    async runLocalBenchmarkTrial(input: LocalTrialInput): Promise<TrialSummary> {
      return runLocalBenchmarkTrial(
        { pool: getPool(databaseUrl), models, signal: activityHooks().signal },
        input,
      );
    },
  };
}

/** Which of an evaluation's judges to tally. */
export interface EvaluationJudgesInput {
  readonly evaluationId: string;
  readonly rubric: boolean;
  readonly answer: boolean;
}

async function evaluationJudgeTally(pool: pg.Pool, input: EvaluationJudgesInput): Promise<ControlTally> {
  return sumTallies(
    ...(input.rubric ? [await rubricControlTally(pool, input.evaluationId)] : []),
    ...(input.answer ? [await answerControlTally(pool, input.evaluationId)] : []),
  );
}

/** The evaluation activities' interface, for `proxyActivities`. */
export type EvaluationActivities = ReturnType<typeof createEvaluationActivities>;
export { exportEvaluationTrials } from './export.js';
