import type pg from 'pg';
import { BOUNDS } from '../../schemas/bounds.js';
import type { WaitingModelRole } from '../../schemas/model-endpoint.js';
import type { RejectReason, TaskStage } from '../../schemas/synthesis-records.js';
import {
  FuzzyTaskSchema,
  refinedToolsetSchema,
  toolsetDraftSchema,
} from '../../schemas/synthesis-records.js';
import { DEFAULT_TASK_SIZE, type SynthesisSpec, type TaskSize } from '../../schemas/synthesis-spec.js';
import type { ModelClient } from '../llm/index.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import type { TemplateChoice } from '../templates/templates.js';
import { extractRubric, type RubricStageInput } from './rubric-stage.js';
import { range, readTask, recordRepairs, setStage, type StageDeps } from './stage-common.js';
import { callStage } from './teacher-call.js';
import { checkToolset, repairToolset } from './tool-validation.js';
import { currentStage } from './task-stage.js';

export type { RubricStageInput } from './rubric-stage.js';

/** What every stage activity gets: which task, and the spec settings it needs. */
export interface StageInput {
  readonly runId: string;
  readonly taskId: string;
  readonly idx: number;
  readonly seed: number;
  readonly templates: TemplateChoice;
  /** The run's task size; absent in the input of tasks started before it existed (their histories replay). */
  readonly taskSize?: TaskSize;
}

/** A stage's outcome: done (with small facts for the workflow), or a rejection with its reason. */
export type StageOutcome =
  | { readonly ok: true; readonly templateId: string; readonly facts?: Record<string, number> }
  | {
      readonly ok: false;
      readonly reason: RejectReason;
      readonly detail: string;
      readonly templateId?: string;
    };

/** Input of stages (a) and (c): the task and its teacher. */
export type TeacherStageInput = StageInput & { readonly teacher: WaitingModelRole };

/** Input of stage (b): the teacher and which refinements the spec switches on. */
export type RefineStageInput = TeacherStageInput & { readonly refine: SynthesisSpec['refine'] };

/** Input of stage (f): the task's outcome, its roles and the template ids its stages used. */
export interface FinalizeTaskInput {
  readonly runId: string;
  readonly taskId: string;
  readonly idx: number;
  readonly outcome: 'kept' | 'rejected' | 'failed';
  readonly reason?: RejectReason | (string & {});
  readonly detail?: string;
  readonly failedStage?: TaskStage;
  readonly roles: Record<string, WaitingModelRole>;
  readonly templateIds: Record<string, string>;
}

/** Stage (a): scenario, workflow, tool ecosystem, forbidden behaviours, over-specified request. */
async function synthesizeToolset(
  { pool, models }: StageDeps,
  input: TeacherStageInput,
): Promise<StageOutcome> {
  const size = input.taskSize ?? DEFAULT_TASK_SIZE;
  const { rows } = await pool().query(
    'SELECT persona_id, persona FROM synthesis_personas WHERE run_id = $1 AND idx = $2',
    [input.runId, input.idx],
  );
  const persona = rows[0];
  if (!persona)
    return { ok: false, reason: 'invalid_persona', detail: `no persona #${input.idx} was loaded` };
  await pool().query(
    `INSERT INTO tasks (task_id, run_id, idx, persona_id) VALUES ($1, $2, $3, $4) ON CONFLICT (task_id) DO NOTHING`,
    [input.taskId, input.runId, input.idx, persona.persona_id],
  );
  const answer = await callStage(models, {
    role: 'teacher',
    model: input.teacher,
    stage: 'toolset',
    templates: input.templates,
    values: {
      persona: persona.persona,
      workflowSteps: range(2, size.workflowSteps),
      toolCount: range(3, size.tools),
    },
    schema: toolsetDraftSchema(size),
    taskId: input.taskId,
    seed: input.seed,
  });
  if (!answer.ok) return { ok: false, reason: 'model_output_rejected', detail: answer.detail };
  const draft = answer.value;
  const repaired = repairToolset(draft.tools);
  await recordRepairs(pool, input.taskId, 'toolset', repaired.repairs);
  await setStage(pool, input.taskId, 'toolset', {
    scenario: draft.scenario,
    workflow: JSON.stringify(draft.workflow),
    draft_tools: JSON.stringify(repaired.tools),
    forbidden: JSON.stringify(draft.forbidden),
    request: draft.request,
  });
  const check = checkToolset(repaired.tools);
  if (!check.ok)
    return { ok: false, reason: 'invalid_tools', detail: check.problems.join('; ').slice(0, 2_000) };
  return {
    ok: true,
    templateId: answer.templateId,
    facts: { tools: check.tools.length, steps: draft.workflow.length, repaired: repaired.repairs.length },
  };
}

/** The prompt lines of the refinements the spec switches on (none: stage (b) keeps the draft tools). */
function refinementsAsked(refine: SynthesisSpec['refine']): string[] {
  return [
    refine.removeSelfSolvable &&
      '- Remove tools whose work the assistant could do itself without a tool (arithmetic, formatting, summarising text it already has).',
    refine.makeSimulable &&
      '- Rewrite tool descriptions so each tool returns concrete, structured data that can be simulated consistently (ids, statuses, records), never open-ended prose or side effects that cannot be observed.',
    refine.distractors > 0 &&
      `- Add exactly ${refine.distractors} distractor tool(s): plausible in this setting but not needed by the workflow.`,
  ].filter(Boolean) as string[];
}

/** Stage (b): remove self-solvable tools, make outputs simulable, add distractors (each switchable). */
async function refineToolset({ pool, models }: StageDeps, input: RefineStageInput): Promise<StageOutcome> {
  const task = await readTask(pool, input.taskId);
  const asked = refinementsAsked(input.refine);
  if (asked.length === 0) {
    await setStage(pool, input.taskId, 'refine', {
      tools: JSON.stringify(task.draft_tools),
      refinement: JSON.stringify({ removed: [], distractors: [] }),
    });
    return { ok: true, templateId: 'none' };
  }
  const answer = await callStage(models, {
    role: 'teacher',
    model: input.teacher,
    stage: 'refine',
    templates: input.templates,
    values: {
      scenario: task.scenario,
      workflow: task.workflow,
      tools: task.draft_tools,
      refinements: asked.join('\n'),
    },
    schema: refinedToolsetSchema(
      input.taskSize ?? DEFAULT_TASK_SIZE,
      (task.draft_tools as unknown[]).length,
      input.refine.distractors,
    ),
    taskId: input.taskId,
    seed: input.seed,
  });
  if (!answer.ok) return { ok: false, reason: 'model_output_rejected', detail: answer.detail };
  const repaired = repairToolset(answer.value.tools);
  await recordRepairs(pool, input.taskId, 'refine', repaired.repairs);
  const check = checkToolset(repaired.tools);
  if (!check.ok) {
    return {
      ok: false,
      reason: 'invalid_refined_tools',
      detail: check.problems.join('; ').slice(0, 2_000),
    };
  }
  await setStage(pool, input.taskId, 'refine', {
    tools: JSON.stringify(check.tools),
    refinement: JSON.stringify({ removed: answer.value.removed, distractors: answer.value.distractors }),
  });
  return {
    ok: true,
    templateId: answer.templateId,
    facts: {
      tools: check.tools.length,
      removed: answer.value.removed.length,
      distractors: answer.value.distractors.length,
      repaired: repaired.repairs.length,
    },
  };
}

/** Stage (c): the underspecified instruction I and the user-only context C. */
async function writeFuzzyTask({ pool, models }: StageDeps, input: TeacherStageInput): Promise<StageOutcome> {
  const task = await readTask(pool, input.taskId);
  const answer = await callStage(models, {
    role: 'teacher',
    model: input.teacher,
    stage: 'instruction',
    templates: input.templates,
    values: { scenario: task.scenario, request: task.request, workflow: task.workflow },
    schema: FuzzyTaskSchema,
    taskId: input.taskId,
    seed: input.seed,
  });
  if (!answer.ok) return { ok: false, reason: 'model_output_rejected', detail: answer.detail };
  await setStage(pool, input.taskId, 'instruction', {
    instruction: answer.value.instruction,
    hidden_context: answer.value.hiddenContext,
  });
  return { ok: true, templateId: answer.templateId };
}

/**
 * Stage (f): the task's outcome and provenance (models, template versions, tokens by role).
 * `failed` (its workflow failed): `failedStage` is the stage it was in, `reason` the error's
 * type and `detail` its message.
 */
async function finalizeTask({ pool, models }: StageDeps, input: FinalizeTaskInput): Promise<void> {
  const modelsByRole = Object.fromEntries(
    Object.entries(input.roles).map(([role, model]) => {
      const endpoint = resolveEndpoint(model.endpoint);
      return [role, { model: endpoint.model, baseUrl: endpoint.baseUrl, sampling: model.sampling }];
    }),
  );
  const provenance = {
    models: modelsByRole,
    templates: input.templateIds,
    tokensByRole: await models.usageByRole(input.taskId),
  };
  // A task refused before stage (a) created its row (no persona) still gets one, for the report.
  await pool().query(
    `INSERT INTO tasks (task_id, run_id, idx, persona_id) VALUES ($1, $2, $3, '') ON CONFLICT (task_id) DO NOTHING`,
    [input.taskId, input.runId, input.idx],
  );
  // The workflow knows which activity failed (its first stage); the row, which stage finished last.
  const failedStage =
    input.outcome === 'failed' && input.failedStage
      ? currentStage(input.failedStage, (await readTask(pool, input.taskId)).stage)
      : null;
  await setStage(pool, input.taskId, input.outcome, {
    reject_reason: input.reason ?? null,
    reject_detail: input.detail?.slice(0, BOUNDS.detailChars) ?? null,
    failed_stage: failedStage,
    provenance: JSON.stringify(provenance),
  });
}

/** Stage activities of one task; each reads and writes its `tasks` row and returns only a small outcome. */
export function createStageActivities(pool: () => pg.Pool, models: ModelClient) {
  const deps: StageDeps = { pool, models };
  return {
    /** Stage (a): scenario, workflow, tool ecosystem, forbidden behaviours, over-specified request. */
    synthesizeToolset: (input: TeacherStageInput): Promise<StageOutcome> => synthesizeToolset(deps, input),
    /** Stage (b): remove self-solvable tools, make outputs simulable, add distractors (each switchable). */
    refineToolset: (input: RefineStageInput): Promise<StageOutcome> => refineToolset(deps, input),
    /** Stage (c): the underspecified instruction I and the user-only context C. */
    writeFuzzyTask: (input: TeacherStageInput): Promise<StageOutcome> => writeFuzzyTask(deps, input),
    /** Stage (e): the coverage filter, then the rubric from the demonstrations that passed it. */
    extractRubric: (input: RubricStageInput): Promise<StageOutcome> => extractRubric(deps, input),
    /** Stage (f): the task's outcome and provenance (models, template versions, tokens by role). */
    finalizeTask: (input: FinalizeTaskInput): Promise<void> => finalizeTask(deps, input),
  };
}

/** The stage activities' interface, for `proxyActivities`. */
export type StageActivities = ReturnType<typeof createStageActivities>;
