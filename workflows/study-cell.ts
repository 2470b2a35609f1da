import { continueAsNew, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { MockworldActivities } from '../activities/index.js';
import { sftLearningRate, type Cell } from '../activities/study/grid.js';
import type { ScalingStudySpec } from '../schemas/scaling-study-spec.js';
import { LONG_ACTIVITY } from './activity-options.js';
import { trainerActivities } from './trainer.js';

const study = proxyActivities<MockworldActivities>(LONG_ACTIVITY);

/** Optimizer steps per workflow run before continue-as-new (each step adds ~6 events). */
const STEPS_PER_RUN = 500;

export interface StudyCellInput {
  readonly studyId: string;
  readonly cell: Cell;
  readonly spec: ScalingStudySpec;
}

/** What a cell carries across continue-as-new: the data set is built, these steps are applied. */
export interface CellProgress {
  readonly examples: number;
  readonly steps: number;
  readonly applied: number;
  readonly lastMetrics: Record<string, unknown>;
}

export interface CellResult {
  readonly cellId: string;
  readonly score: number | null;
  readonly examples: number;
  readonly steps: number;
}

/**
 * One cell of a study's grid: build its SFT set from the protocol's admitted responses, train it
 * step by step on the GPU queue (each step exactly once: the trainer is idempotent by run and
 * step), then mean@k on the test set. A cell already evaluated is returned as recorded, so
 * re-running or extending a study never trains a cell twice.
 */
export async function StudyCell(input: StudyCellInput, carried?: CellProgress): Promise<CellResult> {
  const { studyId, cell, spec } = input;
  const trainerRunId = workflowInfo().workflowId;
  const trainer = trainerActivities(spec.gpuTaskQueue);

  let progress = carried;
  if (!progress) {
    const recorded = await study.startCell({ studyId, cell });
    if (recorded.finished) return recorded.result;
    const dataset = await study.buildCellDataset({
      studyId,
      cell,
      trainerRunId,
      studySeed: spec.seed,
      epochs: spec.sft.epochs,
      globalBatch: spec.sft.globalBatch,
    });
    progress = { examples: dataset.examples, steps: dataset.steps, applied: 0, lastMetrics: {} };
  }

  const model =
    spec.student.base.kind === 'tiny'
      ? { ...spec.student.base, seed: spec.student.base.seed + cell.seed }
      : spec.student.base;
  let { applied, lastMetrics } = progress;
  for (let here = 0; applied < progress.steps; here++) {
    if (here >= STEPS_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof StudyCell>(input, { ...progress, applied, lastMetrics });
    }
    const step = applied + 1;
    const result = await trainer['trainer.sftStep']({
      run_id: trainerRunId,
      step,
      batch_ref: { kind: 'postgres', run_id: trainerRunId, step },
      model,
      config: {
        lr: sftLearningRate(step, progress.steps, spec.sft),
        weight_decay: spec.sft.weightDecay,
        max_seq_len: spec.sft.maxSeqLen,
      },
    });
    applied = result.step;
    lastMetrics = result.metrics;
  }

  // A cell with no examples is never stepped: record its model, or the policy server would
  // evaluate its own --base instead of the student's base.
  if (applied === 0) {
    await trainer['trainer.registerRun']({ run_id: trainerRunId, model });
  }
  await study.recordCellTrained({ studyId, cellId: cell.cellId, steps: applied, metrics: lastMetrics });
  const evaluation = await study.evaluateCell({
    studyId,
    cellId: cell.cellId,
    trainerRunId,
    policyStep: applied,
    student: spec.student.endpoint,
    sampling: spec.evaluation.sampling,
    samples: spec.evaluation.samples,
    judge: spec.judge,
    exactMatch: spec.exactMatch,
  });
  return { cellId: cell.cellId, score: evaluation.score, examples: progress.examples, steps: applied };
}
