import type pg from 'pg';
import { BOUNDS } from '../../schemas/bounds.js';
import type { ModelRole } from '../../schemas/model-endpoint.js';
import type { RejectReason, TaskStage } from '../../schemas/synthesis-records.js';
import {
  FuzzyTaskSchema,
  refinedToolsetSchema,
  rubricDraftSchema,
  toolsetDraftSchema,
} from '../../schemas/synthesis-records.js';
import { DEFAULT_TASK_SIZE, type SynthesisSpec, type TaskSize } from '../../schemas/synthesis-spec.js';
import type { ModelClient } from '../llm/index.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import type { TemplateChoice } from '../templates/templates.js';
import { SynthesisStageError } from './errors.js';
import { judgeCoverage, type DemonstrationCoverage } from './coverage.js';
import { callStage } from './teacher-call.js';
import { checkToolset, repairToolset, type ToolRepair } from './tool-validation.js';
import { currentStage } from './task-stage.js';
import { renderTranscript } from './transcript.js';

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

/** "from to max" as the stage prompts write a range ("3 to 8"), or the one count when they meet. */
const range = (from: number, max: number) => (Math.min(from, max) === max ? `${max}` : `${from} to ${max}`);

/** A stage's outcome: done (with small facts for the workflow), or a rejection with its reason. */
export type StageOutcome =
  | { readonly ok: true; readonly templateId: string; readonly facts?: Record<string, number> }
  | {
      readonly ok: false;
      readonly reason: RejectReason;
      readonly detail: string;
      readonly templateId?: string;
    };

/** Stage activities of one task; each reads and writes its `tasks` row and returns only a small outcome. */
export function createStageActivities(pool: () => pg.Pool, models: ModelClient) {
  async function setStage(
    taskId: string,
    stage: TaskStage,
    fields: Record<string, unknown> = {},
  ): Promise<void> {
    const names = Object.keys(fields);
    // Column names are spliced into the SQL (identifiers cannot be parameters): only plain names.
    const bad = names.find((name) => !/^[a-z_]{1,63}$/.test(name));
    if (bad !== undefined)
      throw new SynthesisStageError(taskId, `setStage: "${bad}" is not a tasks column name`);
    const assignments = names.map((name, i) => `${name} = $${i + 3}`);
    await pool().query(
      `UPDATE tasks SET stage = $2, updated_at = now()${assignments.map((a) => `, ${a}`).join('')} WHERE task_id = $1`,
      [taskId, stage, ...names.map((n) => fields[n])],
    );
  }

  /** Records a stage's tool-set repairs on the task's row, keyed by stage (a retry writes the same). */
  async function recordRepairs(taskId: string, stage: TaskStage, repairs: readonly ToolRepair[]) {
    await pool().query(
      `UPDATE tasks SET tool_repairs = coalesce(tool_repairs, '{}'::jsonb) || jsonb_build_object($2::text, $3::jsonb) WHERE task_id = $1`,
      [taskId, stage, JSON.stringify(repairs)],
    );
  }

  async function readTask(taskId: string) {
    const { rows } = await pool().query('SELECT * FROM tasks WHERE task_id = $1', [taskId]);
    if (!rows[0]) throw new SynthesisStageError(taskId, 'it does not exist; the toolset stage creates it');
    return rows[0];
  }

  const stages = {
    /** Stage (a): scenario, workflow, tool ecosystem, forbidden behaviours, over-specified request. */
    async synthesizeToolset(input: StageInput & { readonly teacher: ModelRole }): Promise<StageOutcome> {
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
      await recordRepairs(input.taskId, 'toolset', repaired.repairs);
      await setStage(input.taskId, 'toolset', {
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
    },

    /** Stage (b): remove self-solvable tools, make outputs simulable, add distractors (each switchable). */
    async refineToolset(
      input: StageInput & { readonly teacher: ModelRole; readonly refine: SynthesisSpec['refine'] },
    ): Promise<StageOutcome> {
      const task = await readTask(input.taskId);
      const asked = [
        input.refine.removeSelfSolvable &&
          '- Remove tools whose work the assistant could do itself without a tool (arithmetic, formatting, summarising text it already has).',
        input.refine.makeSimulable &&
          '- Rewrite tool descriptions so each tool returns concrete, structured data that can be simulated consistently (ids, statuses, records), never open-ended prose or side effects that cannot be observed.',
        input.refine.distractors > 0 &&
          `- Add exactly ${input.refine.distractors} distractor tool(s): plausible in this setting but not needed by the workflow.`,
      ].filter(Boolean);
      if (asked.length === 0) {
        await setStage(input.taskId, 'refine', {
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
      await recordRepairs(input.taskId, 'refine', repaired.repairs);
      const check = checkToolset(repaired.tools);
      if (!check.ok) {
        return {
          ok: false,
          reason: 'invalid_refined_tools',
          detail: check.problems.join('; ').slice(0, 2_000),
        };
      }
      await setStage(input.taskId, 'refine', {
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
    },

    /** Stage (c): the underspecified instruction I and the user-only context C. */
    async writeFuzzyTask(input: StageInput & { readonly teacher: ModelRole }): Promise<StageOutcome> {
      const task = await readTask(input.taskId);
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
      await setStage(input.taskId, 'instruction', {
        instruction: answer.value.instruction,
        hidden_context: answer.value.hiddenContext,
      });
      return { ok: true, templateId: answer.templateId };
    },

    /**
     * Stage (e): the coverage filter, then sub-goals and required interactions from the workflow
     * and the demonstrations that passed it (seed §3.3). Each demonstration's coverage is measured
     * by the coverage judge against the workflow, one verdict per step (coverage.ts); those that
     * executed less of the workflow than the threshold are dropped before the rubric is written,
     * and a task with none left is discarded (`low_coverage`, no rubric call). Demonstrations the
     * world rejected (a simulator gave no usable answer, `world.*SimulatorFailure: reject`) are not
     * judged and never kept; a task with only those is rejected (`demonstrations_rejected`).
     */
    async extractRubric(
      input: StageInput & {
        readonly rubricExtractor: ModelRole;
        /** Absent in the input of tasks started before it existed: the rubric extractor's role. */
        readonly coverageJudge?: ModelRole;
        readonly coverageThreshold: number;
        readonly episodeIds: readonly string[];
      },
    ): Promise<StageOutcome> {
      const task = await readTask(input.taskId);
      const size = input.taskSize ?? DEFAULT_TASK_SIZE;
      const { rows: episodes } = await pool().query(
        'SELECT episode_id, messages, end_reason, end_detail FROM episodes WHERE episode_id = ANY($1::text[])',
        [input.episodeIds],
      );
      const byId = new Map(episodes.map((e) => [e.episode_id as string, e]));
      const found = input.episodeIds.map((id) => byId.get(id)).filter((e) => e !== undefined);
      const rejected = found.filter((e) => e.end_reason === 'simulator_failed');
      const ordered = found.filter((e) => e.end_reason !== 'simulator_failed');
      if (ordered.length === 0) {
        const reasons = rejected.map((e) => `${e.episode_id}: ${e.end_detail ?? e.end_reason}`).join('; ');
        const detail = `no demonstration is usable; ${reasons || 'none was run'}`;
        return { ok: false, reason: 'demonstrations_rejected', detail: detail.slice(0, BOUNDS.detailChars) };
      }
      const workflow = task.workflow as string[];
      const coverage: DemonstrationCoverage[] = [];
      for (const episode of ordered) {
        coverage.push(
          await judgeCoverage(models, {
            taskId: input.taskId,
            workflow,
            instruction: task.instruction ?? '',
            episodeId: episode.episode_id as string,
            messages: episode.messages,
            judge: input.coverageJudge ?? input.rubricExtractor,
            threshold: input.coverageThreshold,
            templates: input.templates,
            seed: input.seed,
          }),
        );
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
      const keptIds = new Set(coverage.filter((c) => c.kept).map((c) => c.episodeId));
      const shown = ordered.filter((e) => keptIds.has(e.episode_id as string));
      if (shown.length === 0) {
        await setStage(input.taskId, 'rubric', { coverage: JSON.stringify(coverage) });
        const best = Math.max(0, ...coverage.map((c) => c.fraction));
        return {
          ok: false,
          reason: 'low_coverage',
          detail: `best demonstration executed ${(best * 100).toFixed(0)}% of the workflow, below ${(input.coverageThreshold * 100).toFixed(0)}%`,
        };
      }
      // Each shown demonstration gets an equal share of the bound, so the prompt stays bounded for any K.
      const perDemonstration = Math.min(
        BOUNDS.gradedTranscriptChars,
        Math.floor(BOUNDS.rubricDemonstrationsChars / shown.length),
      );
      const answer = await callStage(models, {
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
      if (!answer.ok) return { ok: false, reason: 'model_output_rejected', detail: answer.detail };
      await setStage(input.taskId, 'rubric', {
        rubric: JSON.stringify({
          forbidden: task.forbidden,
          subGoals: answer.value.subGoals,
          requiredInteractions: answer.value.requiredInteractions,
        }),
        coverage: JSON.stringify(coverage),
      });
      return { ok: true, templateId: answer.templateId, facts: { keptDemonstrations: shown.length } };
    },

    /**
     * Stage (f): the task's outcome and provenance (models, template versions, tokens by role).
     * `failed` (its workflow failed): `failedStage` is the stage it was in, `reason` the error's
     * type and `detail` its message.
     */
    async finalizeTask(input: {
      readonly runId: string;
      readonly taskId: string;
      readonly idx: number;
      readonly outcome: 'kept' | 'rejected' | 'failed';
      readonly reason?: RejectReason | (string & {});
      readonly detail?: string;
      readonly failedStage?: TaskStage;
      readonly roles: Record<string, ModelRole>;
      readonly templateIds: Record<string, string>;
    }): Promise<void> {
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
          ? currentStage(input.failedStage, (await readTask(input.taskId)).stage)
          : null;
      await setStage(input.taskId, input.outcome, {
        reject_reason: input.reason ?? null,
        reject_detail: input.detail?.slice(0, BOUNDS.detailChars) ?? null,
        failed_stage: failedStage,
        provenance: JSON.stringify(provenance),
      });
    },
  };

  return stages;
}

/** The stage activities' interface, for `proxyActivities`. */
export type StageActivities = ReturnType<typeof createStageActivities>;
