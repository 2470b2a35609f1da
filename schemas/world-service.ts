import { z } from 'zod';
import { ModelRoleSchema, SamplingSchema } from './model-endpoint.js';
import { ChatMessageSchema } from './openai-chat.js';
import { DEFAULT_JUDGE_SAMPLING } from './rubric-judge.js';
import { TemplatesSchema } from './templates.js';

/**
 * The world service (services/world, `mockworld world`): mockworld's tool simulator, user
 * simulator and judge over HTTP for external RL frameworks (verl). Its configuration and every
 * request body; a body that does not parse is a 400 naming each bad field.
 */

/** How the service plays the world: the models of its three roles and the templates they use. */
export const WorldServiceConfigSchema = z
  .object({
    models: z
      .object({
        toolSimulator: ModelRoleSchema.default({ sampling: { temperature: 0.2, topP: 1, maxTokens: 512 } }),
        userSimulator: ModelRoleSchema.default({ sampling: { temperature: 0.3, topP: 1, maxTokens: 256 } }),
        judge: ModelRoleSchema.extend({ sampling: SamplingSchema.default(DEFAULT_JUDGE_SAMPLING) }).default({
          sampling: DEFAULT_JUDGE_SAMPLING,
        }),
      })
      .strict()
      .default({
        toolSimulator: { sampling: { temperature: 0.2, topP: 1, maxTokens: 512 } },
        userSimulator: { sampling: { temperature: 0.3, topP: 1, maxTokens: 256 } },
        judge: { sampling: DEFAULT_JUDGE_SAMPLING },
      })
      .describe(
        'Unset endpoints use the environment default (MOCKWORLD_MODEL_URL, else the embedded model).',
      ),
    templates: TemplatesSchema.default({ version: 'v1', overrides: {} }),
    maxTurns: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(16)
      .describe('OpenEnv episodes (`/ws`): agent turns before the judge scores the episode (seed: 16).'),
    ledgerRunId: z
      .string()
      .min(1)
      .default('world-service')
      .describe('Run id the model usage ledger charges the service’s calls to (`mockworld report <id>`).'),
  })
  .strict();
export type WorldServiceConfig = z.infer<typeof WorldServiceConfigSchema>;

/** Idempotency: a retried request with the same id is answered from the first answer, paying nothing. */
const RequestId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
  .describe('Unique per logical request; a retry sends the same id.');

export const OpenSessionRequestSchema = z
  .object({ request_id: RequestId, task_id: z.string().min(1).max(500) })
  .strict();

export const ToolCallRequestSchema = z
  .object({
    request_id: RequestId,
    /** The call's arguments: a JSON object, or its text as the model wrote it. */
    arguments: z.union([z.string().max(65_536), z.record(z.string(), z.unknown())]),
  })
  .strict();

export const AskUserRequestSchema = z
  .object({ request_id: RequestId, question: z.string().trim().min(1).max(4_000) })
  .strict();

export const JudgeRequestSchema = z
  .object({
    request_id: RequestId,
    /** The finished trajectory: the agent's messages from the prompt on, as the session answered them. */
    messages: z.array(ChatMessageSchema).min(2).max(512),
  })
  .strict();

export const CloseSessionRequestSchema = z.object({ request_id: RequestId }).strict();

/**
 * OpenEnv's reset (`{"type": "reset", "data": {...}}` on the world's `/ws`): the task to play. An
 * `episode_id` names the trajectory; a client that reconnects with the same one gets the same
 * answers, paying nothing twice. Other keys (OpenEnv's `seed`) are ignored, as OpenEnv's own
 * servers ignore keys their environment does not take.
 */
export const OpenEnvResetSchema = z.object({
  task_id: z.string().min(1).max(500),
  episode_id: z
    .string()
    .min(1)
    .max(150)
    .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
    .optional(),
});

/**
 * OpenEnv's step: the agent's turn as an assistant message. Tool calls (the task's tools and
 * `ask_user`) are answered; a turn without one is the final answer, which the judge scores.
 */
export const OpenEnvActionSchema = z
  .object({
    content: z.string().max(65_536).nullish(),
    tool_calls: z
      .array(
        z
          .object({
            id: z.string().min(1).max(200).optional(),
            name: z.string().min(1).max(64),
            arguments: z.union([z.string().max(65_536), z.record(z.string(), z.unknown())]).default({}),
          })
          .strict(),
      )
      .max(16)
      .optional(),
  })
  .strict();
export type OpenEnvAction = z.infer<typeof OpenEnvActionSchema>;
