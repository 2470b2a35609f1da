/** The teacher's answer in trace-level repair (seed §7.1, RQ3) and the SFT trace variants built from it. */
import { z } from 'zod';

/** Name of the repair's structured output (the `json_schema` name sent to the endpoint). */
export const REPAIR_SCHEMA_NAME = 'trace_repair';

const NotBlank = z.string().regex(/\S/, 'must not be blank');

/** The teacher's repair answer, as the `traceRepair` template asks for it. */
export const RepairOutputSchema = z
  .object({
    check: NotBlank.describe(
      'The check of the wrong solution: which step is wrong and why, as the solver re-reading it.',
    ),
    fixed_solution: NotBlank.describe(
      'The complete corrected solution, ending with the final answer in \\boxed{}.',
    ),
  })
  .strict();
/** A validated repair answer. */
export type RepairOutput = z.infer<typeof RepairOutputSchema>;

/** Which trace a repair contributes: the full wrong → check → fix trace, or the corrected solution only. */
export const RepairVariantSchema = z.enum(['wrong_check_fix', 'revised_only']);
export type RepairVariant = z.infer<typeof RepairVariantSchema>;
