/**
 * How a study question is shown to a model: the question text, then its options labelled A, B,
 * C, ... (seed §4: SuperGPQA items are multiple-choice). One formatter serves the teacher, the
 * judge, trace repair and Evol-Instruct, so every role sees the same question.
 */
import { ProtocolInputError } from '../errors.js';

/** Most options a question may have: one per letter A–Z (SuperGPQA uses up to 10). */
export const MAX_OPTIONS = 26;

/** A question as the protocols see it: free-answer when `options` is absent or empty. */
export interface StudyQuestion {
  /** The question text, without its options. */
  readonly question: string;
  /** The options in label order (A, B, C, ...); absent or empty for a free-answer question. */
  readonly options?: readonly string[] | null;
}

/** The label of the option at `index` (0 → `A`). */
export function optionLetter(index: number): string {
  if (!Number.isInteger(index) || index < 0 || index >= MAX_OPTIONS) {
    throw new ProtocolInputError('optionLetter', `index ${index} is not in 0..${MAX_OPTIONS - 1}`);
  }
  return String.fromCharCode(65 + index);
}

/** The index of an uppercase option label (`A` → 0), or null when `letter` is not one of the first `count` labels. */
export function letterIndex(letter: string, count: number): number | null {
  if (!/^[A-Z]$/.test(letter)) return null;
  const index = letter.charCodeAt(0) - 65;
  return index < count ? index : null;
}

/** The options of a question, `[]` for a free-answer question. */
export function optionsOf(question: Pick<StudyQuestion, 'options'>): readonly string[] {
  const options = question.options ?? [];
  if (options.length > MAX_OPTIONS) {
    throw new ProtocolInputError(
      'optionsOf',
      `${options.length} options, at most ${MAX_OPTIONS} can be labelled`,
    );
  }
  return options;
}

/**
 * The question as a model reads it: the text, and for a multiple-choice question a blank line and
 * one `A. option` line per option.
 */
export function formatQuestion(question: StudyQuestion): string {
  const options = optionsOf(question);
  const text = question.question.trim();
  if (options.length === 0) return text;
  const lines = options.map((option, index) => `${optionLetter(index)}. ${option.trim()}`);
  return `${text}\n\nOptions:\n${lines.join('\n')}`;
}
