import { z } from 'zod';
import { BOUNDS } from './bounds.js';
import { TOOL_NAME_PATTERN } from './function-tool.js';
import { RubricChecksSchema } from './rubric-rules.js';
import type { TaskSize } from './synthesis-spec.js';

// LLM output contracts of the synthesis stages. Tools have the function-calling shape here, so
// servers with guided decoding produce objects of that shape; names, `required` and the
// parameter schemas are then checked by the function-calling validator, which records precisely
// why a tool set is not usable.

/** The shape of a generated tool: what guided decoding can enforce. */
const DraftToolSchema = z.object({
  type: z.literal('function'),
  function: z.object({
    // The pattern goes to the model's JSON schema only: a constrained decoder (the embedded
    // model's grammar, vLLM's) then writes only names the function-calling check accepts, while
    // a server that ignores it gets that check's recorded reason (invalid_tools), as before.
    name: z.string().min(1).max(64).meta({ pattern: TOOL_NAME_PATTERN.source }),
    description: z.string().min(1).max(600),
    parameters: z.object({
      type: z.literal('object'),
      properties: z.record(
        z.string(),
        z.object({ type: z.enum(['string', 'number', 'integer', 'boolean', 'array', 'object']) }).loose(),
      ),
      // Property names, so at most as long as a tool name: bounded, a loop cannot fill the answer.
      required: z.array(z.string().min(1).max(64)).max(16),
    }),
  }),
});

/**
 * Stage (a): the teacher's scenario, workflow, tool ecosystem and forbidden behaviours, within the
 * run's task size (built per run, hence a function).
 */
export function toolsetDraftSchema(size: TaskSize) {
  return z.object({
    scenario: z.string().min(1).max(4_000),
    workflow: z.array(z.string().min(1).max(500)).min(2).max(size.workflowSteps),
    tools: z.array(DraftToolSchema).min(1).max(size.tools),
    forbidden: z.array(z.string().min(1).max(500)).min(1).max(3),
    request: z
      .string()
      .min(1)
      .max(4_000)
      .describe('The over-specified request that spells out the workflow.'),
  });
}
export type ToolsetDraft = z.infer<ReturnType<typeof toolsetDraftSchema>>;

/**
 * Stage (b): the refined tool set and what changed (built per task): at most the run's tools plus
 * the distractors asked for, at most as many removals as the draft has tools.
 */
export function refinedToolsetSchema(size: TaskSize, draftTools: number, distractors: number) {
  return z.object({
    tools: z
      .array(DraftToolSchema)
      .min(1)
      .max(size.tools + distractors),
    removed: z.array(z.object({ name: z.string(), reason: z.string() })).max(draftTools),
    distractors: z.array(z.string()).max(distractors),
  });
}
export type RefinedToolset = z.infer<ReturnType<typeof refinedToolsetSchema>>;

/** Stage (c): the underspecified instruction I and the user-only context C (seed eq. 3). */
export const FuzzyTaskSchema = z.object({
  instruction: z.string().min(1).max(BOUNDS.instructionChars),
  hiddenContext: z.string().min(1).max(BOUNDS.hiddenContextChars),
});
export type FuzzyTask = z.infer<typeof FuzzyTaskSchema>;

/**
 * Stage (e): sub-goals and required user interactions, within the run's task size (built per
 * run). Which workflow steps each demonstration executed is not asked here: the coverage judge
 * measures it against the workflow before the rubric is written (schemas/coverage-judge.ts).
 */
export function rubricDraftSchema(size: TaskSize) {
  return z.object({
    subGoals: z.array(z.string().min(1).max(500)).min(1).max(size.subGoals),
    requiredInteractions: z.array(z.string().min(1).max(500)).max(size.requiredInteractions),
  });
}
export type RubricDraft = z.infer<ReturnType<typeof rubricDraftSchema>>;

/**
 * The task-level rubric stored with a task (seed §3.3, Table 7). `checks` attaches a rule to any
 * item that the trajectory alone can decide (schemas/rubric-rules.ts); the judge grades the rest.
 * Synthesized rubrics have none; imported tasks may.
 */
export const RubricSchema = z.object({
  forbidden: z.array(z.string()),
  subGoals: z.array(z.string()),
  requiredInteractions: z.array(z.string()),
  checks: RubricChecksSchema.optional(),
});
export type Rubric = z.infer<typeof RubricSchema>;

/** Why a task was discarded; each reason is counted in the statistics report. */
export const RejectReasonSchema = z.enum([
  'invalid_persona',
  'invalid_tools',
  'invalid_refined_tools',
  'model_output_rejected',
  'low_coverage',
  'demonstrations_rejected',
]);
export type RejectReason = z.infer<typeof RejectReasonSchema>;

/**
 * Stages of one task's lifecycle, in order; the last three are outcomes. `pending`: not started;
 * `started`: its workflow is starting and has not reported a stage yet; `failed`: its workflow
 * failed (an error no retry fixes), the row keeps the stage it was in (`failed_stage`) and the
 * error (`reject_reason`: its type, `reject_detail`: its message).
 */
export const TaskStageSchema = z.enum([
  'pending',
  'started',
  'toolset',
  'refine',
  'instruction',
  'demonstrations',
  'rubric',
  'store',
  'kept',
  'rejected',
  'failed',
]);
export type TaskStage = z.infer<typeof TaskStageSchema>;
