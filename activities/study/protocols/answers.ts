/**
 * Final answers of teacher and student responses (seed §4, App. 11.3): extraction of the final
 * answer, and the deterministic exact-match fast path that decides the easy cases before the LLM
 * judge is called. The fast path says `incorrect` only when no careful judge could call the
 * response correct, or when a checkable question (numeric gold, or options) got no final answer
 * though the prompt asks for one; everything it cannot decide (expressions, units, text, hedged or missing
 * answers, roundings) is `undecided`, and the caller asks the judge.
 */
import { compactAnswer, stripMathMarkup } from './math-text.js';
import type { FastVerdict } from '../../../schemas/study-verdict.js';
import { compareNumeric, parseNumericAnswer } from './numeric-answer.js';
import { letterIndex, optionsOf, type StudyQuestion } from './question-format.js';

export { parseJudgeVerdict } from './judge-verdict.js';

/** Where a final answer was found. */
export type AnswerSource = 'boxed' | 'answer_line' | 'lone_letter';

/** A response's final answer as written (markup still in place), and where it was found. */
export interface ExtractedAnswer {
  readonly text: string;
  readonly source: AnswerSource;
}

/** The braced arguments of `\boxed{...}` / `\fbox{...}` in order, nested braces kept. */
interface Boxes {
  readonly contents: readonly string[];
  /** A `\boxed{` whose brace never closes (a response cut off inside its answer). */
  readonly unterminated: boolean;
}

function findBoxes(response: string): Boxes {
  const contents: string[] = [];
  const opening = /\\(?:boxed|fbox)\s*\{/g;
  let match: RegExpExecArray | null;
  while ((match = opening.exec(response)) !== null) {
    const start = match.index + match[0].length;
    let depth = 1;
    let i = start;
    while (i < response.length && depth > 0) {
      const ch = response[i];
      if (ch === '\\') {
        i += 2; // an escaped character (`\{`, `\}`, `\\`) never opens or closes the box
        continue;
      }
      if (ch === '{') depth += 1;
      else if (ch === '}') depth -= 1;
      i += 1;
    }
    if (depth > 0) return { contents, unterminated: true };
    contents.push(response.slice(start, i - 1));
    opening.lastIndex = i; // a box nested inside this one is part of its content
  }
  return { contents, unterminated: false };
}

/** `Answer: X`, `Final answer: X`, `the final answer is X`, `The correct option is X` (Markdown bold allowed). */
const ANSWER_LINE =
  /(?:^|[^A-Za-z])(?:final\s+answer|correct\s+answer|correct\s+option|correct\s+choice|answer)\s*(?:is\s*:?|:)\s*(.*)$/i;

/** The answer of the last explicit answer line; an empty `Final answer:` line takes the next non-empty line. */
function lastAnswerLine(response: string): string | null {
  const lines = response.split(/\r?\n/).map((line) => line.replace(/\*\*|__/g, '').replace(/^\s*#+\s*/, ''));
  for (let index = lines.length - 1; index >= 0; index -= 1) {
    const match = ANSWER_LINE.exec(lines[index]!);
    if (!match) continue;
    let answer = match[1]!.trim();
    if (answer === '')
      answer =
        lines
          .slice(index + 1)
          .find((line) => line.trim() !== '')
          ?.trim() ?? '';
    return answer === '' ? null : answer;
  }
  return null;
}

/** A bare option label: `B`, `(B)`, `B.`, `B)`, `Option B`, `option (b)`. */
const LONE_LETTER = /^(?:(?:option|choice)\s*)?\(?([A-Za-z])\)?[.):]?$/i;

function loneLetter(text: string, count: number): number | null {
  const cleaned = stripMathMarkup(text);
  const match = LONE_LETTER.exec(cleaned);
  if (!match) return null;
  const prefixed = /^(?:option|choice)/i.test(cleaned);
  const letter = match[1]!;
  if (!prefixed && letter !== letter.toUpperCase()) return null; // a lone `a` is a variable, not an option
  return letterIndex(letter.toUpperCase(), count);
}

function lastLoneLetterLine(response: string, count: number): string | null {
  const last = response
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .at(-1);
  return last !== undefined && loneLetter(last, count) !== null ? last : null;
}

/** The final-answer candidates of a response, the last one being its final answer. */
function candidatesOf(
  response: string,
  options: readonly string[],
): { boxes: Boxes; found: ExtractedAnswer[] } {
  const boxes = findBoxes(response);
  if (boxes.contents.length > 0) {
    return { boxes, found: boxes.contents.map((text) => ({ text, source: 'boxed' as const })) };
  }
  const line = lastAnswerLine(response);
  if (line !== null) return { boxes, found: [{ text: line, source: 'answer_line' }] };
  if (options.length > 0) {
    const letter = lastLoneLetterLine(response, options.length);
    if (letter !== null) return { boxes, found: [{ text: letter, source: 'lone_letter' }] };
  }
  return { boxes, found: [] };
}

/**
 * The final answer of a response: the content of its last complete `\boxed{...}` (nested braces
 * kept), else the answer of its last explicit answer line (`Answer: X`, `The final answer is X`),
 * else, for a multiple-choice question (`options` non-empty), a last line that is only an option
 * letter (`B`, `(B)`, `B.`); null when there is none.
 */
export function extractFinalAnswer(
  response: string,
  options: readonly string[] | null = null,
): ExtractedAnswer | null {
  return candidatesOf(response, optionsOf({ options })).found.at(-1) ?? null;
}

function optionKey(text: string): string {
  return compactAnswer(text).toLowerCase();
}

/** The one option whose text (or exact numeric value) an answer gives, or null if none or several. */
function optionByText(text: string, options: readonly string[]): number | null {
  const key = optionKey(text);
  if (key === '') return null;
  const byText = options.flatMap((option, index) => (optionKey(option) === key ? [index] : []));
  if (byText.length > 0) return byText.length === 1 ? byText[0]! : null;
  const value = parseNumericAnswer(text);
  if (!value) return null;
  const byValue = options.flatMap((option, index) => {
    const optionValue = parseNumericAnswer(option);
    return optionValue && compareNumeric(optionValue, value) === 'correct' ? [index] : [];
  });
  return byValue.length === 1 ? byValue[0]! : null;
}

/** `B. text`, `(B) text`, `B) text`, `B: text`. */
const LABELLED = /^(?:(?:option|choice)\s*)?(?:\(([A-Z])\)|([A-Z])[.):])\s*(.+)$/i;

/**
 * The option index an answer (or a gold target) names, or null when it names none or is
 * ambiguous: an option letter alone; a letter with the option's text (`B. 1/3`; a letter whose
 * text is another option's is ambiguous); else the text of exactly one option, compared without
 * markup, spaces and case; else the numeric value of exactly one option (`0.5` for `1/2`).
 */
export function resolveOption(text: string, options: readonly string[]): number | null {
  const lone = loneLetter(text, options.length);
  if (lone !== null) return lone;
  const labelled = LABELLED.exec(stripMathMarkup(text));
  if (labelled) {
    const index = letterIndex((labelled[1] ?? labelled[2]!).toUpperCase(), options.length);
    if (index !== null) return optionByText(labelled[3]!, options) === index ? index : null;
  }
  return optionByText(text, options);
}

/** Compares one candidate answer with the gold target. */
function compareAnswer(gold: string, answer: string, options: readonly string[]): FastVerdict {
  if (options.length > 0) {
    const goldIndex = resolveOption(gold, options);
    const answerIndex = resolveOption(answer, options);
    if (goldIndex === null || answerIndex === null) return 'undecided';
    return goldIndex === answerIndex ? 'correct' : 'incorrect';
  }
  const goldKey = compactAnswer(gold);
  if (goldKey !== '' && goldKey === compactAnswer(answer)) return 'correct';
  const goldValue = parseNumericAnswer(gold);
  const answerValue = parseNumericAnswer(answer);
  if (!goldValue || !answerValue) return 'undecided';
  return compareNumeric(goldValue, answerValue);
}

/**
 * The deterministic fast path of the correctness judge.
 *
 * - Multiple-choice (`question.options` non-empty): the gold target (a letter, or one option's
 *   text) and the final answer (a letter, `B. text`, or one option's text or exact value) are
 *   mapped to options; the same option → `correct`, another option → `incorrect`; either not
 *   mappable → `undecided`.
 * - Free answer: identical after markup and spaces are removed → `correct`; both numeric →
 *   {@link compareNumeric} (equal within a relative 1e-9; a possible rounding of the other value is
 *   `undecided`); anything else (expressions, units, text) → `undecided`.
 *
 * Every `\boxed{}` of the response is a candidate: all of them `correct` → `correct`, all
 * `incorrect` → `incorrect`, otherwise `undecided` (a hedged `\boxed{3}` … `\boxed{4}` goes to the
 * judge). A `\boxed{` cut off before its closing brace → `undecided`. No final answer at all:
 * `incorrect` when the gold target is checkable ({@link checkableGold}: the prompt asks for a final answer, and a
 * response that gives none has answered nothing a checker or a judge could credit — this is what
 * keeps a model that writes noise from being graded by a judge that accepts noise), else
 * `undecided`.
 */
export function exactMatch(
  question: Pick<StudyQuestion, 'options'>,
  gold: string,
  response: string,
): FastVerdict {
  const options = optionsOf(question);
  const { boxes, found } = candidatesOf(response, options);
  if (boxes.unterminated) return 'undecided';
  if (found.length === 0) return checkableGold(question, gold) ? 'incorrect' : 'undecided';
  const verdicts = new Set(found.map((candidate) => compareAnswer(gold, candidate.text, options)));
  return verdicts.size === 1 ? [...verdicts][0]! : 'undecided';
}

/**
 * Whether the deterministic checker can decide answers to this question: a multiple-choice
 * question whose gold target names one option, or a free-answer question with a numeric gold.
 */
export function checkableGold(question: Pick<StudyQuestion, 'options'>, gold: string): boolean {
  const options = optionsOf(question);
  return options.length > 0 ? resolveOption(gold, options) !== null : parseNumericAnswer(gold) !== null;
}
