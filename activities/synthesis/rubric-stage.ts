/** Stage (e) of a task: the coverage filter over its demonstrations, then its rubric. */
import type pg from 'pg';
import { BOUNDS } from '../../schemas/bounds.js';
import { batchWindowOf, type WaitingModelRole } from '../../schemas/model-endpoint.js';
import { rubricDraftSchema } from '../../schemas/synthesis-records.js';
import { DEFAULT_TASK_SIZE } from '../../schemas/synthesis-spec.js';
import type { ModelClient } from '../llm/index.js';
import { ensureCoverageControl } from './coverage-controls.js';
import { judgeCoverage, type DemonstrationCoverage } from './coverage.js';
import { range, readTask, setStage, type StageDeps, type TaskRow } from './stage-common.js';
import type { StageInput, StageOutcome } from './stages.js';
import { callStage } from './teacher-call.js';
import { renderTranscript } from './transcript.js';

/** Input of stage (e): the judges and the demonstrations' episode ids. */
export type RubricStageInput = StageInput & {
  readonly rubricExtractor: WaitingModelRole;
  /** Absent in the input of tasks started before it existed: the rubric extractor's role. */
  readonly coverageJudge?: WaitingModelRole;
  readonly coverageThreshold: number;
  readonly episodeIds: readonly string[];
};

/** The demonstrations' episode rows, in input order: those the world rejected apart from the rest. */
async function loadDemonstrations(pool: () => pg.Pool, episodeIds: readonly string[]) {
  const { rows: episodes } = await pool().query(
    'SELECT episode_id, messages, end_reason, end_detail FROM episodes WHERE episode_id = ANY($1::text[])',
    [episodeIds],
  );
  const byId = new Map(episodes.map((e) => [e.episode_id as string, e]));
  const found = episodeIds.map((id) => byId.get(id)).filter((e) => e !== undefined);
  return {
    rejected: found.filter((e) => e.end_reason === 'simulator_failed'),
    ordered: found.filter((e) => e.end_reason !== 'simulator_failed'),
  };
}

/** A task's demonstrations as loadDemonstrations splits them. */
type Demonstrations = Awaited<ReturnType<typeof loadDemonstrations>>;

/** What every coverage verdict of the task is asked with: its workflow, instruction and judge. */
const coverageQuestion = (input: RubricStageInput, task: TaskRow) => ({
  taskId: input.taskId,
  workflow: task.workflow as string[],
  instruction: (task.instruction as string | null) ?? '',
  judge: input.coverageJudge ?? input.rubricExtractor,
  templates: input.templates,
  seed: input.seed,
});

/**
 * Each usable demonstration's coverage, judged one after another, then the rejected ones (never
 * kept); then the judge's control for the task (coverage-controls.ts), which decides nothing here.
 */
async function judgeDemonstrations(
  { pool, models }: StageDeps,
  input: RubricStageInput,
  task: TaskRow,
  { ordered, rejected }: Demonstrations,
): Promise<DemonstrationCoverage[]> {
  const question = coverageQuestion(input, task);
  const judge = (episode: Demonstrations['ordered'][number]) =>
    judgeCoverage(models, {
      ...question,
      episodeId: episode.episode_id as string,
      messages: episode.messages,
      threshold: input.coverageThreshold,
    });
  const control = () =>
    ensureCoverageControl({ pool: pool(), models }, { ...question, runId: task.run_id as string });
  const coverage: DemonstrationCoverage[] = [];
  if (batchWindowOf(question.judge)) {
    // Batched verdicts are asked together, so they wait for one job rather than one job each.
    const [verdicts] = await Promise.all([Promise.all(ordered.map(judge)), control()]);
    coverage.push(...verdicts);
  } else {
    for (const episode of ordered) coverage.push(await judge(episode));
    await control();
  }
  for (const e of rejected) {
    coverage.push({
      episodeId: e.episode_id,
      executedSteps: [],
      fraction: 0,
      kept: false,
      rejected: e.end_detail ?? e.end_reason,
    });
  }
  return coverage;
}

/** The rubric extractor's call on the kept demonstrations, each given an equal share of the prompt bound. */
async function callRubricExtractor(
  models: ModelClient,
  input: RubricStageInput,
  task: TaskRow,
  shown: Demonstrations['ordered'],
) {
  const size = input.taskSize ?? DEFAULT_TASK_SIZE;
  // Each shown demonstration gets an equal share of the bound, so the prompt stays bounded for any K.
  const perDemonstration = Math.min(
    BOUNDS.gradedTranscriptChars,
    Math.floor(BOUNDS.rubricDemonstrationsChars / shown.length),
  );
  return callStage(models, {
    role: 'rubric-extractor',
    model: input.rubricExtractor,
    stage: 'rubric',
    templates: input.templates,
    values: {
      workflow: (task.workflow as string[]).map((step, i) => `${i}. ${step}`).join('\n'),
      instruction: task.instruction,
      hiddenContext: task.hidden_context,
      demonstrations: shown
        .map((e, i) => `### Execution ${i}\n${renderTranscript(e.messages, perDemonstration)}`)
        .join('\n\n'),
      subGoalCount: range(1, size.subGoals),
      interactionCount: range(0, size.requiredInteractions),
    },
    schema: rubricDraftSchema(size),
    taskId: input.taskId,
    seed: input.seed,
  });
}

/**
 * Stage (e): the coverage filter, then sub-goals and required interactions from the workflow
 * and the demonstrations that passed it (seed §3.3). Each demonstration's coverage is measured
 * by the coverage judge against the workflow, one verdict per step (coverage.ts); those that
 * executed less of the workflow than the threshold are dropped before the rubric is written,
 * and a task with none left is discarded (`low_coverage`, no rubric call). Demonstrations the
 * world rejected (a simulator gave no usable answer, `world.*SimulatorFailure: reject`) are not
 * judged and never kept; a task with only those is rejected (`demonstrations_rejected`).
 */
export async function extractRubric(
  { pool, models }: StageDeps,
  input: RubricStageInput,
): Promise<StageOutcome> {
  const task = await readTask(pool, input.taskId);
  const demonstrations = await loadDemonstrations(pool, input.episodeIds);
  const { ordered, rejected } = demonstrations;
  if (ordered.length === 0) {
    const reasons = rejected.map((e) => `${e.episode_id}: ${e.end_detail ?? e.end_reason}`).join('; ');
    const detail = `no demonstration is usable; ${reasons || 'none was run'}`;
    return { ok: false, reason: 'demonstrations_rejected', detail: detail.slice(0, BOUNDS.detailChars) };
  }
  const coverage = await judgeDemonstrations({ pool, models }, input, task, demonstrations);
  const keptIds = new Set(coverage.filter((c) => c.kept).map((c) => c.episodeId));
  const shown = ordered.filter((e) => keptIds.has(e.episode_id as string));
  if (shown.length === 0) {
    await setStage(pool, input.taskId, 'rubric', { coverage: JSON.stringify(coverage) });
    const best = Math.max(0, ...coverage.map((c) => c.fraction));
    return {
      ok: false,
      reason: 'low_coverage',
      detail: `best demonstration executed ${(best * 100).toFixed(0)}% of the workflow, below ${(input.coverageThreshold * 100).toFixed(0)}%`,
    };
  }
  const answer = await callRubricExtractor(models, input, task, shown);
  if (!answer.ok) return { ok: false, reason: 'model_output_rejected', detail: answer.detail };
  await setStage(pool, input.taskId, 'rubric', {
    rubric: JSON.stringify({
      forbidden: task.forbidden,
      subGoals: answer.value.subGoals,
      requiredInteractions: answer.value.requiredInteractions,
    }),
    coverage: JSON.stringify(coverage),
  });
  return { ok: true, templateId: answer.templateId, facts: { keptDemonstrations: shown.length } };
}
