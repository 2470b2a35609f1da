/**
 * The two filters of Evol-Instruct question synthesis (seed §6.1.0.2: "format and similarity
 * filtering"). The format filter checks one evolved question against what
 * the prompt asked; the similarity filter drops evolved questions too close to their own seed or
 * to an evolved question already kept. Each rejection carries a reason to record. The question's
 * shape and the reasons are schemas/evolved-question.ts.
 */
import type {
  EvolvedQuestion,
  FormatRejection,
  SimilarityRejection,
} from '../../../schemas/evolved-question.js';
import { compactAnswer } from './math-text.js';
import { compareNumeric, parseNumericAnswer } from './numeric-answer.js';
import { requestedOptionCount } from './evol-prompt.js';
import { letterIndex, optionsOf, type StudyQuestion } from './question-format.js';
import { jaccardSimilarity, tokenSet } from './text-similarity.js';
import { ProtocolInputError } from '../errors.js';

/** The format filter's decision. */
export type FormatCheck =
  { readonly ok: true } | { readonly ok: false; readonly reason: FormatRejection; readonly detail: string };

function reject(reason: FormatRejection, detail: string): FormatCheck {
  return { ok: false, reason, detail };
}

/** Whether two options say the same: equal without markup, spaces and case, or the same number (`1/2`, `0.5`). */
function sameOption(a: string, b: string): boolean {
  if (compactAnswer(a).toLowerCase() === compactAnswer(b).toLowerCase()) return true;
  const x = parseNumericAnswer(a);
  const y = parseNumericAnswer(b);
  return x !== null && y !== null && compareNumeric(x, y) === 'correct';
}

/**
 * The format filter. An evolved question passes when its question and explanation are not blank;
 * it has exactly {@link requestedOptionCount}(seed) options (the seed's count; for a free-answer
 * seed the {@link FREE_ANSWER_OPTION_COUNT} the prompt asked for, so the evolved question is
 * multiple-choice with `answer_text` as its gold), none blank and no two the same (compared
 * without markup, spaces and case, and by numeric value); `answer_letter` is one uppercase letter
 * naming one of them (surrounding spaces ignored); and `answer_text` equals that option's text
 * exactly (surrounding spaces ignored).
 */
export function checkEvolvedFormat(
  evolved: EvolvedQuestion,
  seed: Pick<StudyQuestion, 'options'>,
): FormatCheck {
  if (evolved.question.trim() === '') return reject('empty_question', 'the question is blank');
  const expected = requestedOptionCount(seed);
  const { options } = evolved;
  if (options.length !== expected) {
    return reject('option_count', `${options.length} options, the seed asks for ${expected}`);
  }
  const blank = options.findIndex((option) => option.trim() === '');
  if (blank >= 0) return reject('empty_option', `option ${blank} is blank`);
  for (let i = 0; i < options.length; i += 1) {
    for (let j = i + 1; j < options.length; j += 1) {
      if (sameOption(options[i]!, options[j]!)) {
        return reject(
          'duplicate_options',
          `options ${i} and ${j} say the same: ${JSON.stringify(options[j])}`,
        );
      }
    }
  }
  const index = letterIndex(evolved.answer_letter.trim(), options.length);
  if (index === null) {
    return reject(
      'answer_letter',
      `answer_letter ${JSON.stringify(evolved.answer_letter)} names none of ${options.length} options`,
    );
  }
  if (evolved.answer_text.trim() !== options[index]!.trim()) {
    return reject(
      'answer_text_mismatch',
      `answer_text ${JSON.stringify(evolved.answer_text)} is not option ${evolved.answer_letter.trim()} ${JSON.stringify(options[index])}`,
    );
  }
  if (evolved.explanation.trim() === '') return reject('empty_explanation', 'the explanation is blank');
  return { ok: true };
}

/** An evolved question as a study question, its gold being its answer letter. */
export function evolvedAsStudyQuestion(evolved: EvolvedQuestion): StudyQuestion & { readonly gold: string } {
  return {
    question: evolved.question.trim(),
    options: evolved.options.map((o) => o.trim()),
    gold: evolved.answer_letter.trim(),
  };
}

/** Default similarity threshold: an evolved question is kept only when its token-set Jaccard similarity to its seed and to every kept question is below 0.7. */
export const DEFAULT_SIMILARITY_THRESHOLD = 0.7;

/** One evolved question (already through the format filter) and the seed it came from. */
export interface SimilarityCandidate {
  readonly seed: StudyQuestion;
  readonly evolved: EvolvedQuestion;
}

/** The similarity filter's decision on one candidate. */
export type SimilarityDecision =
  | { readonly kept: true; readonly seedSimilarity: number }
  | {
      readonly kept: false;
      readonly reason: SimilarityRejection;
      /** The similarity that refused it (to its seed, or to the kept candidate `against`). */
      readonly similarity: number;
      /** Index of the kept candidate it is too close to; null for its seed or no tokens. */
      readonly against: number | null;
    };

/** The text compared: the question and its options, without labels (labels would inflate every pair alike). */
function similarityTokens(question: StudyQuestion): ReadonlySet<string> {
  return tokenSet([question.question, ...optionsOf(question)].join('\n'));
}

/**
 * The similarity filter, in input order (deterministic: of two near-duplicates the earlier is
 * kept). A candidate is kept when its token-set Jaccard similarity (question and options) to its
 * own seed and to every candidate kept before it is strictly below `threshold` (default
 * {@link DEFAULT_SIMILARITY_THRESHOLD}); a kept candidate with the same token set is reported as
 * `duplicate_of_kept`. Candidate pairs are found by prefix filtering (tokens ordered rarest
 * first), which finds every pair at or above the threshold without comparing all pairs.
 */
export function filterBySimilarity(
  candidates: readonly SimilarityCandidate[],
  threshold: number = DEFAULT_SIMILARITY_THRESHOLD,
): SimilarityDecision[] {
  if (!(threshold > 0 && threshold <= 1)) {
    throw new ProtocolInputError('filterBySimilarity', `threshold ${threshold} is not in (0, 1]`);
  }
  const tokens = candidates.map((candidate) => similarityTokens(evolvedAsStudyQuestion(candidate.evolved)));
  const frequency = new Map<string, number>();
  for (const set of tokens) for (const token of set) frequency.set(token, (frequency.get(token) ?? 0) + 1);
  const rarestFirst = (a: string, b: string) =>
    frequency.get(a)! - frequency.get(b)! || (a < b ? -1 : a > b ? 1 : 0);
  const prefixOf = (set: ReadonlySet<string>) => {
    // Two sets with Jaccard ≥ t share at least ceil(t·|x|) tokens, so they share one among the
    // first |x| − ceil(t·|x|) + 1 of each in a common order (the prefix filtering lemma).
    const required = Math.max(1, Math.ceil(threshold * set.size - 1e-9));
    return [...set].sort(rarestFirst).slice(0, set.size - required + 1);
  };
  const index = new Map<string, number[]>();
  const decisions: SimilarityDecision[] = [];
  candidates.forEach((candidate, i) => {
    const own = tokens[i]!;
    if (own.size === 0) {
      decisions.push({ kept: false, reason: 'no_tokens', similarity: 0, against: null });
      return;
    }
    const seedSimilarity = jaccardSimilarity(own, similarityTokens(candidate.seed));
    if (seedSimilarity >= threshold) {
      decisions.push({ kept: false, reason: 'similar_to_seed', similarity: seedSimilarity, against: null });
      return;
    }
    const prefix = prefixOf(own);
    const probed = new Set<number>();
    for (const token of prefix) for (const kept of index.get(token) ?? []) probed.add(kept);
    let closest: { similarity: number; against: number } | null = null;
    for (const kept of [...probed].sort((a, b) => a - b)) {
      const similarity = jaccardSimilarity(own, tokens[kept]!);
      if (similarity >= threshold && (closest === null || similarity > closest.similarity)) {
        closest = { similarity, against: kept };
      }
    }
    if (closest !== null) {
      decisions.push({
        kept: false,
        reason: closest.similarity === 1 ? 'duplicate_of_kept' : 'similar_to_kept',
        ...closest,
      });
      return;
    }
    decisions.push({ kept: true, seedSimilarity });
    for (const token of prefix) {
      const postings = index.get(token);
      if (postings) postings.push(i);
      else index.set(token, [i]);
    }
  });
  return decisions;
}
