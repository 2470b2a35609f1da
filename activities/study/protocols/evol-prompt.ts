/**
 * The Evol-Instruct prompt of question synthesis (seed §6.1.0.2, App. 11.3): a system message and
 * a user message asking for one new multiple-choice question in the seed question's field,
 * subfield and difficulty, answered as JSON ({@link EvolvedQuestionSchema}). Both messages live in
 * the one `evolInstruct` template, under a `System:` and a `User:` line as in the seed.
 */
import {
  loadTemplate,
  renderTemplate,
  type Template,
  type TemplateChoice,
} from '../../templates/templates.js';
import { ProtocolInputError } from '../errors.js';
import { goldTarget } from './judge-prompt.js';
import { formatQuestion, optionsOf, type StudyQuestion } from './question-format.js';
import { requireStage, SHIPPED_TEMPLATES, type PromptMessage } from './stage-template.js';

/**
 * Options asked for when the seed question is free-answer. The seed's prompt only writes
 * multiple-choice questions, and its output example has four options.
 */
export const FREE_ANSWER_OPTION_COUNT = 4;

/** A seed question to evolve, with the metadata the prompt names (SuperGPQA fields). */
export interface EvolSeed extends StudyQuestion {
  /** Its gold answer; when given it is shown, so the model can avoid reusing it (as the prompt asks). */
  readonly answer?: string | null;
  readonly field: string;
  readonly subfield: string;
  readonly difficulty: string;
}

/** Options the evolved question must have: the seed's count, or {@link FREE_ANSWER_OPTION_COUNT}. */
export function requestedOptionCount(seed: Pick<StudyQuestion, 'options'>): number {
  const count = optionsOf(seed).length;
  return count > 0 ? count : FREE_ANSWER_OPTION_COUNT;
}

/** The `{seed_prompt}` of the template: the formatted question, then `Answer: ...` if the answer is known. */
export function evolSeedPrompt(seed: EvolSeed): string {
  const question = formatQuestion(seed);
  const answer = seed.answer?.trim();
  return answer ? `${question}\n\nAnswer: ${goldTarget(seed, answer)}` : question;
}

function splitMessages(template: Template): { system: string; user: string } {
  const match = /^System:[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*User:[ \t]*\r?\n([\s\S]*)$/.exec(
    template.text.trimStart(),
  );
  if (!match || /^[ \t]*(?:System|User):[ \t]*$/m.test(match[2]!)) {
    throw new ProtocolInputError(
      'buildEvolInstructMessages',
      `template ${template.id} must start with a "System:" line and have exactly one "User:" line`,
    );
  }
  return { system: match[1]!, user: match[2]! };
}

/** The system and user messages asking for one evolved question of `seed` (pure). */
export function buildEvolInstructMessages(template: Template, seed: EvolSeed): readonly PromptMessage[] {
  requireStage(template, 'evolInstruct', 'buildEvolInstructMessages');
  for (const key of ['field', 'subfield', 'difficulty'] as const) {
    if (seed[key].trim() === '')
      throw new ProtocolInputError('buildEvolInstructMessages', `seed ${key} is empty`);
  }
  const parts = splitMessages(template);
  const values = {
    seed_prompt: evolSeedPrompt(seed),
    field: seed.field.trim(),
    subfield: seed.subfield.trim(),
    difficulty: seed.difficulty.trim(),
    num_options: String(requestedOptionCount(seed)),
  };
  // Each part is filled on its own, so a seed question containing a "User:" line cannot move the split.
  return [
    { role: 'system', content: renderTemplate({ ...template, text: parts.system }, values).trim() },
    { role: 'user', content: renderTemplate({ ...template, text: parts.user }, values).trim() },
  ];
}

/** {@link buildEvolInstructMessages} with the `evolInstruct` template of `templates` (loaded once per process). */
export async function evolInstructMessages(
  seed: EvolSeed,
  templates: TemplateChoice = SHIPPED_TEMPLATES,
): Promise<readonly PromptMessage[]> {
  return buildEvolInstructMessages(await loadTemplate('evolInstruct', templates), seed);
}
