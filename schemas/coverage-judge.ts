/**
 * The coverage judge of rubric construction (seed §3.3, issue 18): which steps of the task's
 * workflow a teacher demonstration carried out, one verdict per step, measured by a judge against
 * the workflow rather than reported by the model that writes the rubric. Demonstrations below the
 * spec's coverageThreshold are dropped before the rubric is written.
 */
import { z } from 'zod';

/** Name of the judge's structured output (the `json_schema` name; also the template stage). */
export const COVERAGE_SCHEMA_NAME = 'coverage';

/** Longest evidence quote accepted for an executed step. */
export const MAX_COVERAGE_EVIDENCE_CHARS = 300;

/**
 * The judge's answer for a workflow of `steps` steps (built per task): exactly one verdict per
 * step, indices 0..steps-1 each once (an enum, so constrained decoders stay in range), and a quote
 * for every step called executed.
 */
export function coverageSchema(steps: number) {
  const index = steps > 0 ? z.literal(Array.from({ length: steps }, (_, i) => i)) : z.number().int().min(0);
  return z
    .object({
      steps: z
        .array(
          z.object({
            index,
            executed: z.boolean(),
            evidence: z
              .string()
              .max(MAX_COVERAGE_EVIDENCE_CHARS)
              .describe('Short quote from the transcript that shows the step done; "" if not executed.'),
          }),
        )
        .length(steps),
    })
    .superRefine((value, ctx) => {
      const seen = new Set<number>();
      value.steps.forEach((verdict, i) => {
        if (seen.has(verdict.index)) {
          ctx.addIssue({
            code: 'custom',
            path: ['steps', i, 'index'],
            message: `index ${verdict.index} is repeated; use each of 0..${steps - 1} once`,
          });
        }
        seen.add(verdict.index);
        if (verdict.executed && verdict.evidence.trim() === '') {
          ctx.addIssue({
            code: 'custom',
            path: ['steps', i, 'evidence'],
            message: 'an executed step needs a quote from the transcript as evidence',
          });
        }
      });
    });
}

/** A coverage judge's answer. */
export type CoverageVerdicts = z.infer<ReturnType<typeof coverageSchema>>;
