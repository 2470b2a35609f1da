import { z } from 'zod';
import { markedJudgeControlsSchema } from './judge-controls.js';
import { ModelRoleSchema, RunBudgetSchema, WaitingModelRoleSchema } from './model-endpoint.js';
import { PresetSchema } from './presets.js';
import { ReasoningSourceSchema } from './reasoning-synthesis.js';
import { runNameField } from './run-name.js';
import { TemplatesSchema } from './templates.js';

const role = (temperature: number, maxTokens: number) =>
  ModelRoleSchema.default({ sampling: { temperature, topP: 1, maxTokens } });

/** Which refinements of a generated tool set run (seed §3.1); each can be switched off. */
export const RefineSchema = z
  .object({
    removeSelfSolvable: z
      .boolean()
      .default(true)
      .describe('Drop tools the model could do itself (arithmetic, formatting).'),
    makeSimulable: z
      .boolean()
      .default(true)
      .describe('Rewrite tool outputs so an LLM can simulate them consistently.'),
    distractors: z
      .number()
      .int()
      .min(0)
      .max(2)
      .default(1)
      .describe('Plausible but unneeded tools to add (0 = off).'),
  })
  .strict();

/**
 * How large each synthesized task may be: the most tools, workflow steps, sub-goals and required
 * user interactions a model may write. They are the bounds of the stages' output schemas, so a
 * constrained decoder (the embedded model's grammar, vLLM's guided decoding) cannot write more,
 * and the ranges the stage prompts ask for. Small bounds suit small models (the demo's SmolLM2).
 */
export const TaskSizeSchema = z
  .object({
    tools: z
      .number()
      .int()
      .min(1)
      .max(12)
      .default(8)
      .describe('Most task tools the teacher designs (refinement may add its distractors).'),
    workflowSteps: z
      .number()
      .int()
      .min(2)
      .max(12)
      .default(8)
      .describe('Most steps of the high-level workflow.'),
    subGoals: z.number().int().min(1).max(16).default(8).describe('Most sub-goals of the rubric.'),
    requiredInteractions: z
      .number()
      .int()
      .min(0)
      .max(8)
      .default(5)
      .describe('Most required user interactions of the rubric.'),
  })
  .strict();
export type TaskSize = z.infer<typeof TaskSizeSchema>;

/** The task size of a spec that names none (what the stage prompts asked for before it existed). */
export const DEFAULT_TASK_SIZE: TaskSize = {
  tools: 8,
  workflowSteps: 8,
  subGoals: 8,
  requiredInteractions: 5,
};

/**
 * What the mock world does with a simulator that gives no usable answer (out of bounds, not
 * JSON, wrong shape, empty) even after its repair call and its redraws: `tool-error` answers the
 * agent's call with an error observation it sees and can react to, as a real tool that fails;
 * `reject` ends the episode with that reason recorded on its row, and the episode is left out
 * (a rejected demonstration, a rollout that is not judged).
 */
export const SimulatorFailureSchema = z.enum(['tool-error', 'reject']);
export type SimulatorFailure = z.infer<typeof SimulatorFailureSchema>;

/**
 * What the agent may do on one turn of an episode, sent as the request's OpenAI `tool_choice`:
 * `auto` (a tool call or an answer: the seed), `ask_user` (must ask the simulated user),
 * `task_tool` (must call one of the task's own tools: only those are offered that turn),
 * `answer` (must answer without a tool). Honoured by vLLM, SGLang, OpenAI and the embedded server.
 */
export const TurnToolChoiceSchema = z.enum(['auto', 'ask_user', 'task_tool', 'answer']);
export type TurnToolChoice = z.infer<typeof TurnToolChoiceSchema>;

/** The tool choice of an episode's first turns; turns past the list are `auto`. */
export const TurnToolChoicesSchema = z
  .array(TurnToolChoiceSchema)
  .max(64)
  .default([])
  .describe(
    "The agent's tool choice on its first turns, in order (auto | ask_user | task_tool | answer); " +
      'later turns are auto. Default []: every turn auto, as the seed. For a small model that ' +
      'rarely asks the user or calls a tool unprompted, e.g. [ask_user, task_tool].',
  );

/** Settings of the mock world shared by synthesis and training. */
export const WorldSchema = z
  .object({
    toolSimulatorFailure: SimulatorFailureSchema.default('tool-error').describe(
      'A task tool the simulator cannot answer: an error the agent sees (default: one bad answer ' +
        'costs one observation, not a demonstration or a rollout), or reject the episode.',
    ),
    userSimulatorFailure: SimulatorFailureSchema.default('tool-error').describe(
      'An ask_user the simulated user cannot answer within bounds: an error the agent sees (default), or reject the episode.',
    ),
  })
  .strict();
export type World = z.infer<typeof WorldSchema>;

/** The world settings of a spec that names none. */
export const DEFAULT_WORLD: World = {
  toolSimulatorFailure: 'tool-error',
  userSimulatorFailure: 'tool-error',
};

/**
 * Agentic task synthesis (seed 000 §3.1–3.3): personas → tool ecosystems → underspecified
 * instructions with user-private context → teacher demonstrations in the mock world → rubrics.
 */
export const SynthesisSpecSchema = z
  .object({
    kind: z.literal('Synthesis'),
    preset: PresetSchema,
    budgetUsd: RunBudgetSchema.optional(),
    name: runNameField('synthesis'),
    personas: z
      .object({
        path: z
          .string()
          .min(1)
          .describe(
            'JSONL file of {"id", "persona"} lines. Relative: to the spec file (mockworld start), else on the worker to MOCKWORLD_DATA_DIR, then examples/. Must lie inside the worker data roots (MOCKWORLD_DATA_ROOTS).',
          ),
        offset: z.number().int().min(0).default(0).describe('Skip this many valid personas.'),
      })
      .strict(),
    tasks: z
      .number()
      .int()
      .min(0)
      .max(100_000)
      .describe(
        'Tool-use tasks to synthesize (one per persona, in file order); split larger datasets into ' +
          'several runs. 0 only with a reasoning section (reasoning problems alone).',
      ),
    reasoning: ReasoningSourceSchema.optional().describe(
      "Math and search problems rewritten into persona scenarios and kept when the teacher's solutions agree (seed §3.4).",
    ),
    models: z
      .object({
        teacher: WaitingModelRoleSchema.default({
          sampling: { temperature: 0.7, topP: 1, maxTokens: 2048 },
        }).describe(
          'Writes tool sets, refinements and instructions (batchable) and plays the agent in demonstrations (always online: each turn needs its answer now).',
        ),
        toolSimulator: role(0.2, 512),
        userSimulator: role(0.3, 256),
        rubricExtractor: WaitingModelRoleSchema.default({
          sampling: { temperature: 0, topP: 1, maxTokens: 1024 },
        }),
        coverageJudge: WaitingModelRoleSchema.optional().describe(
          "Judges which workflow steps each demonstration carried out (the coverage filter's measure); " +
            "unset: the rubricExtractor's endpoint and sampling (the parsed spec records which).",
        ),
      })
      .strict()
      .transform((models) => ({ ...models, coverageJudge: models.coverageJudge ?? models.rubricExtractor }))
      .default({
        teacher: { sampling: { temperature: 0.7, topP: 1, maxTokens: 2048 } },
        toolSimulator: { sampling: { temperature: 0.2, topP: 1, maxTokens: 512 } },
        userSimulator: { sampling: { temperature: 0.3, topP: 1, maxTokens: 256 } },
        rubricExtractor: { sampling: { temperature: 0, topP: 1, maxTokens: 1024 } },
        coverageJudge: { sampling: { temperature: 0, topP: 1, maxTokens: 1024 } },
      }),
    demonstrationsPerTask: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(4)
      .describe('Teacher solutions K per task (seed: 4).'),
    maxTurns: z.number().int().min(1).max(64).default(16).describe('Agent turns per episode (seed: 16).'),
    demonstrationToolChoice: TurnToolChoicesSchema,
    coverageThreshold: z
      .number()
      .min(0)
      .max(1)
      .default(0.5)
      .describe(
        'Least fraction of workflow steps the demonstrations must execute; below it the task is discarded.',
      ),
    judgeControls: markedJudgeControlsSchema(
      'empty control demonstrations, in which the coverage judge must find no workflow step done',
    ),
    refine: RefineSchema.default({ removeSelfSolvable: true, makeSimulable: true, distractors: 1 }),
    taskSize: TaskSizeSchema.default(DEFAULT_TASK_SIZE),
    world: WorldSchema.default(DEFAULT_WORLD),
    concurrency: z.number().int().min(1).max(1024).default(8).describe('Tasks in flight at once.'),
    tasksPerWorkflowRun: z
      .number()
      .int()
      .min(1)
      .max(300)
      .default(150)
      .describe(
        'Tasks started before the dataset workflow continues as new (keeps each history under ~3k events).',
      ),
    seed: z.number().int().min(0).default(0).describe('Sampling seed base; task i uses seed + i.'),
    templates: TemplatesSchema.default({ version: 'v1', overrides: {} }),
  })
  .strict()
  .superRefine((spec, ctx) => {
    if (spec.tasks === 0 && !spec.reasoning)
      ctx.addIssue({
        code: 'custom',
        path: ['tasks'],
        message: 'must be at least 1 when the spec has no reasoning section',
      });
    if (spec.demonstrationToolChoice.length > spec.maxTurns)
      ctx.addIssue({
        code: 'custom',
        path: ['demonstrationToolChoice'],
        message: `lists ${spec.demonstrationToolChoice.length} turns, more than maxTurns (${spec.maxTurns})`,
      });
  });

/** Validated synthesis spec. */
export type SynthesisSpec = z.infer<typeof SynthesisSpecSchema>;
