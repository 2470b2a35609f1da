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
 * Verdict `i` as a constrained decoder is asked to write it (the JSON schema's `prefixItems`):
 * index `i`, and a quote when executed, "" when not. The answer's validation below stays as it
 * is (any order); the decoder can only write answers that pass it.
 */
function positionalVerdict(i: number): Record<string, unknown> {
  const { $schema: _drop, ...schema } = z.toJSONSchema(
    z.union([
      z.object({
        index: z.literal(i),
        executed: z.literal(true),
        evidence: z.string().min(1).max(MAX_COVERAGE_EVIDENCE_CHARS),
      }),
      z.object({ index: z.literal(i), executed: z.literal(false), evidence: z.literal('') }),
    ]),
  ) as Record<string, unknown>;
  return schema;
}

/**
 * The judge's answer for a workflow of `steps` steps (built per task): exactly one verdict per
 * step, indices 0..steps-1 each once (an enum, so constrained decoders stay in range), and a quote
 * for every step called executed. The JSON schema also lists the verdicts by position, so a
 * constrained decoder writes verdict i for step i and cannot repeat an index or leave a quote out.
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
        .length(steps)
        .meta({ prefixItems: Array.from({ length: steps }, (_, i) => positionalVerdict(i)) }),
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
