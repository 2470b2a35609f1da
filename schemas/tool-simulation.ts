import { z } from 'zod';
import { BOUNDS, jsonTextDepth, utf8Bytes } from './bounds.js';

/** Name of the tool simulator's structured output (the `json_schema` name sent to the endpoint). */
export const TOOL_SIMULATION_SCHEMA_NAME = 'ToolSimulation';

/**
 * The tool simulator's structured answer, with `equivalentTo` bounded by the number of mapping
 * entries shown (built per call, hence a function). The response is JSON written as text: an open
 * "any JSON" schema is refused by strict structured-output servers and by some grammar engines,
 * while a string is accepted by all of them.
 */
export function toolSimulationSchema(shown: number) {
  const index =
    shown > 0
      ? z
          .number()
          .int()
          .min(0)
          .max(shown - 1)
          .nullable()
      : z.null();
  return z
    .object({
      equivalentTo: index.describe(
        'Index of the shown entry that is semantically the same request, or null if none is.',
      ),
      response: z
        .string()
        .describe('The tool output as JSON text; may be empty when equivalentTo is not null.'),
    })
    .refine((v) => v.equivalentTo !== null || v.response.trim() !== '', {
      message: 'response must be the tool output when equivalentTo is null',
      path: ['response'],
    })
    .refine((v) => utf8Bytes(v.response) <= BOUNDS.toolOutputBytes, {
      message: `response must be at most ${BOUNDS.toolOutputBytes} bytes (a concise tool output)`,
      path: ['response'],
    })
    .refine((v) => jsonTextDepth(v.response) <= BOUNDS.answerDepth, {
      message: `response must not nest arrays/objects more than ${BOUNDS.answerDepth} levels deep`,
      path: ['response'],
    });
}

/** The tool simulator's answer: an equivalent shown entry, or a new response as JSON text. */
export type ToolSimulation = z.infer<ReturnType<typeof toolSimulationSchema>>;
