import { z } from 'zod';
import { ModelEndpointSchema, SamplingSchema } from './model-endpoint.js';

const JsonObject = z.record(z.string(), z.unknown());

/**
 * The wire form of one model call a CPU worker sends to the model gateway: the same fields as the
 * model layer's `ModelCall` (activities/llm/types.ts) without its abort signal, and the
 * structured-output `response_format` when there is one.
 */
export const GatewayRequestSchema = z.object({
  call: z
    .object({
      endpoint: ModelEndpointSchema,
      messages: z.array(JsonObject).min(1),
      tools: z.array(JsonObject).optional(),
      toolChoice: z.union([z.enum(['none', 'auto', 'required']), JsonObject]).optional(),
      sampling: SamplingSchema,
      sampleIndex: z.number().int().min(0).optional(),
      policyVersion: z.string().optional(),
      runId: z.string().optional(),
      role: z.string().optional(),
    })
    .strict(),
  responseFormat: z.unknown().optional(),
});
/** A validated gateway request. */
export type GatewayRequest = z.infer<typeof GatewayRequestSchema>;
