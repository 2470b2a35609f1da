import { z } from 'zod';
import { ModelRoleSchema } from './model-endpoint.js';
import { DEFAULT_WORLD, TurnToolChoicesSchema, WorldSchema } from './synthesis-spec.js';
import { TemplatesSchema } from './templates.js';

/** Why an episode is run: a teacher demonstration (synthesis), a GRPO rollout, or an evaluation. */
export const EpisodePurposeSchema = z.enum(['demonstration', 'rollout', 'evaluation']);
export type EpisodePurpose = z.infer<typeof EpisodePurposeSchema>;

/**
 * How an episode ended: the agent answered without calling a tool, it used up its turns, the
 * simulated user ended the conversation (the stop marker), its transcript reached the bound
 * (`BOUNDS.transcriptBytes`; the turn that would pass it is not kept), or its length did
 * (`length_limit`: an agent turn stopped at its token limit, or the response reached
 * `maxResponseTokens`) — all five are finished episodes that can be judged; `max_turns`,
 * `transcript_limit` and `length_limit` were cut mid-task ({@link TRUNCATED_END_REASONS}).
 * `simulator_failed`: a simulator gave no usable answer and the world settings say reject; the
 * episode is left out, its row says why (`end_detail`).
 */
export const EndReasonSchema = z.enum([
  'final_answer',
  'max_turns',
  'user_stop',
  'transcript_limit',
  'length_limit',
  'simulator_failed',
]);
export type EndReason = z.infer<typeof EndReasonSchema>;

/**
 * End reasons of an episode cut before the agent finished: a cap (turns, tokens, transcript bytes)
 * stopped it while it was still working. Its judge is told so, and GrpoTraining's `truncation`
 * rule decides whether it is trained on.
 */
export const TRUNCATED_END_REASONS: readonly EndReason[] = ['max_turns', 'transcript_limit', 'length_limit'];

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
    turnToolChoice: TurnToolChoicesSchema,
    maxResponseTokens: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        "The agent's response at most, in the endpoint's tokens: its turns and the observations between " +
          'them (seed App. A: 13,000). Each turn asks for no more than is left; unset: each turn only its maxTokens.',
      ),
    templates: TemplatesSchema.default({ version: 'v1', overrides: {} }),
    world: WorldSchema.default(DEFAULT_WORLD),
  })
  .strict();

/** A validated episode input. */
export type EpisodeInput = z.infer<typeof EpisodeInputSchema>;
/** An episode input as a caller writes it (defaults not yet applied). */
export type EpisodeInputData = z.input<typeof EpisodeInputSchema>;
