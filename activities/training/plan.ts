import type pg from 'pg';
import { TrainingPlanError } from './errors.js';
import { iterationSlice, splitHeldOut } from './sampling.js';

/** Input of {@link planIteration}. */
export interface PlanIterationInput {
  /** The training run (workflow id); echoed, not used for sampling. */
  readonly runId: string;
  /** Synthesis run whose kept tasks are trained on. */
  readonly synthesisRunId: string;
  /** Kept tasks held out for evaluation (never trained on). */
  readonly heldOutTasks: number;
  /** Tasks per iteration (B). */
  readonly globalBatch: number;
  /** Tool-use tasks in the mix: the first N kept (GrpoTraining `dataset.toolUseTasks`); all when absent. */
  readonly toolUseTasks?: number;
  /** Reasoning problems mixed in (GrpoTraining `dataset.reasoning`); none when absent. */
  readonly reasoning?: {
    readonly synthesisRunId: string;
    /** The first N kept problems; all when absent. */
    readonly problems?: number;
    /** Whether the spec gives search problems their `search` tool. */
    readonly search: boolean;
  };
  /** The spec's seed: the split and every epoch's permutation derive from it. */
  readonly seed: number;
  /** 0-based iteration. */
  readonly iteration: number;
}

/** The tasks of one iteration and the shape of the schedule. */
export interface IterationPlan {
  /** The iteration's `globalBatch` distinct training task ids. */
  readonly taskIds: string[];
  /** 0-based epoch of the iteration. */
  readonly epoch: number;
  /** Training tasks (kept tasks less the held-out ones). */
  readonly trainSize: number;
  /** ceil(trainSize / globalBatch): `epochs * iterationsPerEpoch` iterations make the run. */
  readonly iterationsPerEpoch: number;
  /** The held-out evaluation task ids (the same for every iteration of the run). */
  readonly heldOutTaskIds: string[];
  /** Which of `taskIds` and `heldOutTaskIds` are reasoning problems (absent: none are). */
  readonly reasoningIds?: string[];
}

/**
 * Plans one GRPO iteration over the run's mix: the kept tool-use tasks of the synthesis run in
 * `idx` order, then its (or another run's) kept reasoning problems in `idx` order, each kind cut to
 * its count; the first `heldOutTasks` of a seeded shuffle of the mix held out, and the iteration's
 * slice of a seeded per-epoch permutation of the rest ({@link iterationSlice}). Deterministic in
 * the seed and the kept items. Throws {@link TrainingPlanError} when the items do not fit the spec.
 */
export async function planIteration(pool: pg.Pool, input: PlanIterationInput): Promise<IterationPlan> {
  const { rows } = await pool.query<{ task_id: string }>(
    `SELECT task_id FROM tasks WHERE run_id = $1 AND stage = 'kept' ORDER BY idx`,
    [input.synthesisRunId],
  );
  const tasks = rows.map((r) => r.task_id).slice(0, input.toolUseTasks);
  const problems = input.reasoning ? await keptProblems(pool, input.synthesisRunId, input.reasoning) : [];
  const kept = [...tasks, ...problems];
  if (input.heldOutTasks > kept.length) {
    throw new TrainingPlanError(
      input.synthesisRunId,
      `heldOutTasks (${input.heldOutTasks}) exceeds its ${kept.length} kept tasks; lower dataset.heldOutTasks`,
    );
  }
  const { heldOut, train } = splitHeldOut(kept, input.heldOutTasks, input.seed);
  if (input.globalBatch > train.length) {
    throw new TrainingPlanError(
      input.synthesisRunId,
      `globalBatch (${input.globalBatch}) exceeds the ${train.length} training tasks ` +
        `(${kept.length} kept, ${heldOut.length} held out); lower globalBatch or dataset.heldOutTasks`,
    );
  }
  const slice = iterationSlice(train, input.globalBatch, input.iteration, input.seed);
  const reasoning = new Set(problems);
  return {
    taskIds: slice.items,
    epoch: slice.epoch,
    trainSize: train.length,
    iterationsPerEpoch: slice.iterationsPerEpoch,
    heldOutTaskIds: heldOut,
    ...(input.reasoning
      ? { reasoningIds: [...slice.items, ...heldOut].filter((id) => reasoning.has(id)) }
      : {}),
  };
}

/**
 * The mix's kept reasoning problems; refuses a reasoning section that adds none, and search
 * problems with no search backend to run them with.
 */
async function keptProblems(
  pool: pg.Pool,
  toolUseRunId: string,
  reasoning: NonNullable<PlanIterationInput['reasoning']>,
): Promise<string[]> {
  const { rows } = await pool.query<{ problem_id: string; kind: string }>(
    `SELECT problem_id, kind FROM reasoning_problems WHERE run_id = $1 AND outcome = 'kept' ORDER BY idx`,
    [reasoning.synthesisRunId],
  );
  const chosen = rows.slice(0, reasoning.problems);
  if (chosen.length === 0 && reasoning.problems !== 0) {
    throw new TrainingPlanError(
      toolUseRunId,
      `dataset.reasoning: synthesis run ${reasoning.synthesisRunId} has no kept reasoning problems`,
    );
  }
  const search = chosen.filter((row) => row.kind === 'search').length;
  if (search > 0 && !reasoning.search) {
    throw new TrainingPlanError(
      toolUseRunId,
      `dataset.reasoning.search: the mix has ${search} search problems and no search backend to run them ` +
        'with; set it (an offline collection or an HTTP search API) or lower dataset.reasoning.problems',
    );
  }
  return chosen.map((row) => row.problem_id);
}
