import { z } from 'zod';
import { ModelRoleSchema } from '../../schemas/model-endpoint.js';
import { TemplateOverrideStageSchema } from '../../schemas/synthesis-spec.js';
import type { TemplateChoice } from '../templates/templates.js';

/** Why an episode is run: a teacher demonstration (synthesis), a GRPO rollout, or an evaluation. */
export const EpisodePurposeSchema = z.enum(['demonstration', 'rollout', 'evaluation']);
export type EpisodePurpose = z.infer<typeof EpisodePurposeSchema>;

/**
 * How an episode ended: the agent answered without calling a tool, it used up its turns, or the
 * simulated user ended the conversation (the stop marker).
 */
export const EndReasonSchema = z.enum(['final_answer', 'max_turns', 'user_stop']);
export type EndReason = z.infer<typeof EndReasonSchema>;

/** The templates an episode uses: a shipped version and per-stage replacement files ({@link TemplateChoice}). */
export const TemplateChoiceSchema = z
  .object({
    version: z.string().regex(/^[A-Za-z0-9_.-]{1,32}$/, 'a shipped template version such as v1'),
    overrides: z.partialRecord(TemplateOverrideStageSchema, z.string().min(1)).default({}),
  })
  .strict() satisfies z.ZodType<TemplateChoice>;

/**
 * One episode to run: ids and settings only (it travels in Temporal payloads); the task's tools,
 * instruction and hidden context are read from `tasks`.
 */
export const EpisodeInputSchema = z
  .object({
    episodeId: z
      .string()
      .min(1)
      .max(300)
      .describe(
        'Deterministic id from the caller (run, task, purpose, sample); a retry resumes this episode.',
      ),
    taskId: z.string().min(1),
    purpose: EpisodePurposeSchema,
    sampleIndex: z
      .number()
      .int()
      .min(0)
      .describe("Sample of the agent's calls (GRPO group member, demonstration k)."),
    policyVersion: z
      .string()
      .min(1)
      .default('base')
      .describe('Weights behind the agent endpoint; a new version never reuses cached answers.'),
    runId: z.string().min(1).describe('Workflow id of the run that pays for the calls (usage ledger).'),
    agentRoleName: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (1-64)')
      .describe("Ledger role of the agent's calls, e.g. teacher or policy."),
    agent: ModelRoleSchema,
    toolSimulator: ModelRoleSchema,
    userSimulator: ModelRoleSchema,
    maxTurns: z.number().int().min(1).max(256).describe('Agent turns (model calls) at most.'),
    templates: TemplateChoiceSchema.default({ version: 'v1', overrides: {} }),
  })
  .strict();

/** A validated episode input. */
export type EpisodeInput = z.infer<typeof EpisodeInputSchema>;
/** An episode input as a caller writes it (defaults not yet applied). */
export type EpisodeInputData = z.input<typeof EpisodeInputSchema>;

/** The small result of an episode; the transcript stays in `episodes`. */
export interface EpisodeSummary {
  readonly episodeId: string;
  /** Agent turns taken (model calls answered). */
  readonly turns: number;
  /** Calls of task tools, failed ones included (not `ask_user`). */
  readonly toolCalls: number;
  /** Valid `ask_user` calls answered by the user simulator. */
  readonly userQuestions: number;
  /** Calls answered with an error observation: unknown tool, arguments not JSON or against the schema. */
  readonly toolErrors: number;
  readonly endReason: EndReason;
}

/** Progress after a turn, passed to `onTurn` (small: the activity heartbeats it). */
export interface EpisodeProgress extends Omit<EpisodeSummary, 'endReason'> {
  /** Null while the episode goes on. */
  readonly endReason: EndReason | null;
}
