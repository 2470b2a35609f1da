import { z } from 'zod';
import { BatchWindowSchema, CallModeSchema, type BatchWindow } from './model-batch.js';
import { hasKeyInQuery, hasUserInfo } from './url-credentials.js';

/** An endpoint's prices in USD per million tokens (cached input defaults to the input price). */
export const ModelPricesSchema = z
  .object({
    inputPerMillion: z.number().min(0).describe('USD per million prompt tokens.'),
    cachedInputPerMillion: z
      .number()
      .min(0)
      .optional()
      .describe(
        'USD per million prompt tokens the provider served from its prompt cache (usage.prompt_tokens_details.cached_tokens); unset = the input price.',
      ),
    outputPerMillion: z.number().min(0).describe('USD per million completion tokens.'),
  })
  .strict();

/** Validated prices. */
export type ModelPrices = z.infer<typeof ModelPricesSchema>;

/**
 * A run's budget in USD over its priced model calls: reaching it pauses the run at its next safe
 * point, with the reason recorded, until it is raised (`mockworld budget <id> <usd>` or the
 * `budget` signal). Answers from the cache cost nothing.
 */
export const RunBudgetSchema = z
  .number()
  .positive()
  .max(1e9)
  .describe(
    "USD the run may spend on priced model calls (endpoint prices); when reached it pauses until raised with `mockworld budget <id> <usd>` or the 'budget' signal.",
  );

/**
 * An OpenAI-compatible model endpoint (vLLM, SGLang, llama.cpp, OpenAI). The key is never part of
 * the spec: `apiKeyEnv` names the environment variable that holds it on the worker.
 */
export const ModelEndpointSchema = z
  .object({
    baseUrl: z.url().describe('OpenAI-compatible base URL, e.g. http://gpu-1:8000/v1.'),
    model: z.string().min(1).describe('Model name sent in requests.'),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name such as OPENAI_API_KEY')
      .optional()
      .describe('Name of the environment variable holding the API key; unset = no key.'),
    maxConcurrency: z.number().int().min(1).max(4096).default(32).describe('In-flight requests per worker.'),
    requestsPerMinute: z.number().int().positive().optional().describe('Request rate cap per worker.'),
    tokensPerMinute: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Token rate cap (prompt+completion) per worker.'),
    timeoutMs: z.number().int().min(100).default(120_000).describe('Per-request timeout in milliseconds.'),
    maxRetries: z
      .number()
      .int()
      .min(0)
      .max(20)
      .default(6)
      .describe('Retries on 429, 5xx, timeouts, broken bodies.'),
    prices: ModelPricesSchema.optional().describe(
      "What the endpoint charges, in USD per million tokens; unset = calls are counted but cost nothing known (a run's budget then cannot see them).",
    ),
  })
  .strict()
  .refine((e) => !hasKeyInQuery(e.baseUrl) && !hasUserInfo(e.baseUrl), {
    message:
      'baseUrl must not carry a key or a user:password; put the key in an environment variable and name it in apiKeyEnv',
    path: ['baseUrl'],
  });

/** Validated endpoint configuration. */
export type ModelEndpoint = z.infer<typeof ModelEndpointSchema>;
/** Endpoint configuration as written in a spec (defaults not yet applied). */
export type ModelEndpointInput = z.input<typeof ModelEndpointSchema>;

/** An OpenAI penalty; 0 (OpenAI's default) is dropped, so it sends and hashes as unset. */
const penalty = (what: string) =>
  z
    .preprocess((value) => (value === 0 ? undefined : value), z.number().min(-2).max(2).optional())
    .describe(what);

/** Sampling settings of one model role. */
export const SamplingSchema = z
  .object({
    temperature: z.number().min(0).max(2).default(0.7),
    topP: z.number().gt(0).max(1).default(1),
    maxTokens: z.number().int().min(1).max(131_072).default(1024),
    seed: z.number().int().optional().describe('Sampling seed passed to servers that honour it.'),
    frequencyPenalty: penalty(
      'OpenAI frequency_penalty: positive values discourage repeating tokens already used.',
    ),
    presencePenalty: penalty('OpenAI presence_penalty: positive values discourage any token already used.'),
  })
  .strict();

/** Validated sampling settings. */
export type Sampling = z.infer<typeof SamplingSchema>;

const noPenalty = z.preprocess(
  (value) => (value === 0 ? undefined : value),
  z.undefined('not allowed here: a penalty would sample from something other than the policy').optional(),
);

/**
 * Sampling from a policy being trained or evaluated: no non-zero penalty, which would sample from
 * something other than the policy's distribution (the policy server refuses one too).
 */
export const PolicySamplingSchema = SamplingSchema.extend({
  frequencyPenalty: noPenalty,
  presencePenalty: noPenalty,
});

/** A model role: an endpoint (unset = the environment default) plus sampling. */
export const ModelRoleSchema = z
  .object({
    endpoint: ModelEndpointSchema.optional(),
    sampling: SamplingSchema.default({ temperature: 0.7, topP: 1, maxTokens: 1024 }),
    mode: z
      .literal('online', {
        error:
          'this role answers within a turn or a training step, so its calls stay online; batch mode is for roles whose answers can wait (synthesis: rubricExtractor, coverageJudge)',
      })
      .optional()
      .describe(
        'online only here; batch mode is for roles whose answers can wait (synthesis rubricExtractor, coverageJudge).',
      ),
  })
  .strict();

/**
 * A role whose answers can wait (a judge, an extractor): its calls may go in provider batch jobs,
 * cheaper and slower, which the run awaits durably (activities/llm/batch).
 */
export const WaitingModelRoleSchema = ModelRoleSchema.extend({
  mode: CallModeSchema.optional().describe(
    'online (unset): each request is sent when made. batch: gathered into provider batch jobs (`batch`), cheaper and slower; the run waits for the answers durably.',
  ),
  batch: BatchWindowSchema.optional().describe(
    'How requests are gathered into batch jobs when mode is batch; unset = the defaults.',
  ),
}).transform((role) =>
  role.mode === 'batch' ? { ...role, batch: role.batch ?? BatchWindowSchema.parse({}) } : role,
);

/** Validated model role. */
export type ModelRole = z.infer<typeof ModelRoleSchema>;

/** Validated role whose answers can wait; every {@link ModelRole} is one (online). */
export type WaitingModelRole = z.infer<typeof WaitingModelRoleSchema>;

/** The batch window of a role whose calls go in batch jobs; undefined for an online role. */
export function batchWindowOf(role: WaitingModelRole): BatchWindow | undefined {
  return role.mode === 'batch' ? role.batch : undefined;
}

/**
 * The role as an online one: for calls whose turn needs its answer now (a demonstration's next
 * turn), which stay online whatever the role's mode.
 */
export function onlineRole(role: WaitingModelRole): ModelRole {
  const { mode: _mode, batch: _batch, ...online } = role;
  return online;
}
