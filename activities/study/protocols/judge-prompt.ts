/**
 * The correctness judge's prompt (seed App. 11.3): the seed's template with its three
 * placeholders filled with the source question, the gold target and the candidate response. The
 * gold answer is supplied, so the judge checks equivalence rather than solving the problem.
 */
import {
  loadTemplate,
  renderTemplate,
  type Template,
  type TemplateChoice,
} from '../../templates/templates.js';
import { resolveOption } from './answers.js';
import { formatQuestion, optionLetter, optionsOf, type StudyQuestion } from './question-format.js';
import { requireStage, SHIPPED_TEMPLATES } from './stage-template.js';

/** What the judge is shown: the question (with its options, as the teacher saw it), gold and response. */
export interface JudgePromptInput extends StudyQuestion {
  /** The gold answer: for a multiple-choice question its letter or its option's text. */
  readonly gold: string;
  /** The whole candidate response (teacher trace or student answer), not only its final answer. */
  readonly response: string;
}

/**
 * The gold target as the judge reads it: for a multiple-choice question whose gold names one
 * option (by letter or text), `B. <option text>`, so that a response answering either way can be
 * matched; otherwise the gold as given.
 */
export function goldTarget(question: Pick<StudyQuestion, 'options'>, gold: string): string {
  const options = optionsOf(question);
  const index = options.length > 0 ? resolveOption(gold, options) : null;
  return index === null ? gold.trim() : `${optionLetter(index)}. ${options[index]!.trim()}`;
}

/** Fills the `studyJudge` template (pure); the judge's answer is read by {@link parseJudgeVerdict}. */
export function buildJudgePrompt(template: Template, input: JudgePromptInput): string {
  requireStage(template, 'studyJudge', 'buildJudgePrompt');
  return renderTemplate(template, {
    origin_question: formatQuestion(input),
    gold_target: goldTarget(input, input.gold),
    predicted_answer: input.response.trim(),
  }).trimEnd();
}

/** {@link buildJudgePrompt} with the `studyJudge` template of `templates` (loaded once per process). */
export async function judgePrompt(
  input: JudgePromptInput,
  templates: TemplateChoice = SHIPPED_TEMPLATES,
): Promise<string> {
  return buildJudgePrompt(await loadTemplate('studyJudge', templates), input);
}
