/**
 * Trace-level repair (seed §7.1, RQ3): a wrong teacher response is given back to the teacher with
 * the gold answer, which checks it and writes a corrected solution. Two SFT targets are built from
 * the answer: the full wrong → check → fix trace, and the revised-only variant (the corrected
 * solution alone). The caller still verifies that the fixed solution reaches the gold answer
 * (fast path, then judge) before it enters a pool.
 */
import { RepairVariantSchema, type RepairOutput, type RepairVariant } from '../../../schemas/trace-repair.js';
import {
  loadTemplate,
  renderTemplate,
  type Template,
  type TemplateChoice,
} from '../../templates/templates.js';
import { ProtocolInputError } from '../errors.js';
import { goldTarget } from './judge-prompt.js';
import { formatQuestion, type StudyQuestion } from './question-format.js';
import { requireStage, SHIPPED_TEMPLATES } from './stage-template.js';

/** The line that opens the check in a wrong → check → fix trace. */
export const CHECK_OPENING = 'Wait, let me check this solution step by step.';
/** The line that opens the corrected solution in a wrong → check → fix trace. */
export const FIX_OPENING = 'Here is the corrected solution.';

/** What the repair prompt shows the teacher: the question (with its options), gold and wrong response. */
export interface RepairPromptInput extends StudyQuestion {
  /** The gold answer (for a multiple-choice question its letter or option text). */
  readonly gold: string;
  /** The teacher's wrong response, whole. */
  readonly wrongResponse: string;
}

/** Fills the `traceRepair` template (pure); the answer is validated with `RepairOutputSchema` (schemas/trace-repair.ts). */
export function buildRepairPrompt(template: Template, input: RepairPromptInput): string {
  requireStage(template, 'traceRepair', 'buildRepairPrompt');
  return renderTemplate(template, {
    question: formatQuestion(input),
    goldAnswer: goldTarget(input, input.gold),
    wrongResponse: input.wrongResponse.trim(),
  }).trimEnd();
}

/** {@link buildRepairPrompt} with the `traceRepair` template of `templates` (loaded once per process). */
export async function repairPrompt(
  input: RepairPromptInput,
  templates: TemplateChoice = SHIPPED_TEMPLATES,
): Promise<string> {
  return buildRepairPrompt(await loadTemplate('traceRepair', templates), input);
}

/**
 * The SFT response text of a repaired trace. `wrong_check_fix`: the wrong response, then
 * {@link CHECK_OPENING} and the check, then {@link FIX_OPENING} and the fixed solution, separated
 * by blank lines (its last `\boxed{}` is the corrected answer). `revised_only`: the fixed solution.
 */
export function composeRepairTrace(
  variant: RepairVariant,
  wrongResponse: string,
  repair: RepairOutput,
): string {
  switch (variant) {
    case 'wrong_check_fix':
      return [
        wrongResponse.trim(),
        CHECK_OPENING,
        repair.check.trim(),
        FIX_OPENING,
        repair.fixed_solution.trim(),
      ].join('\n\n');
    case 'revised_only':
      return repair.fixed_solution.trim();
    default: {
      const unknown: never = variant;
      throw new ProtocolInputError(
        'composeRepairTrace',
        `unknown repair variant ${String(unknown)}; valid: ${RepairVariantSchema.options.join(', ')}`,
      );
    }
  }
}
