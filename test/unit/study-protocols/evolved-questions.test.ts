import { describe, expect, it } from 'vitest';
import {
  checkEvolvedFormat,
  DEFAULT_SIMILARITY_THRESHOLD,
  filterBySimilarity,
  jaccardSimilarity,
  tokenSet,
  type SimilarityCandidate,
  type SimilarityDecision,
  type StudyQuestion,
} from '../../../activities/study/protocols/index.js';
import {
  EvolvedQuestionSchema,
  type EvolvedQuestion,
  type FormatRejection,
} from '../../../schemas/evolved-question.js';

const SEED_MC = { question: 'What is 1/6 + 1/6?', options: ['1/2', '1/3', '2/3', '3/4'] };

const GOOD: EvolvedQuestion = {
  question: 'A fair die is rolled twice. What is the probability that both rolls show an even number?',
  options: ['1/4', '1/2', '1/6', '1/3'],
  answer_letter: 'A',
  answer_text: '1/4',
  explanation: 'Each roll is even with probability 1/2, and the rolls are independent: 1/2 · 1/2 = 1/4.',
};

describe('evolved-question output contract', () => {
  it('accepts the JSON the prompt asks for and refuses missing or extra fields', () => {
    expect(EvolvedQuestionSchema.parse(GOOD)).toEqual(GOOD);
    const { explanation: _dropped, ...missing } = GOOD;
    expect(EvolvedQuestionSchema.safeParse(missing).success).toBe(false);
    expect(EvolvedQuestionSchema.safeParse({ ...GOOD, difficulty: 'easy' }).success).toBe(false);
    expect(EvolvedQuestionSchema.safeParse({ ...GOOD, options: '1/4, 1/2' }).success).toBe(false);
  });
});

describe('format filter', () => {
  it('accepts a well-formed question with the seed’s option count', () => {
    expect(checkEvolvedFormat(GOOD, SEED_MC)).toEqual({ ok: true });
    expect(checkEvolvedFormat({ ...GOOD, answer_letter: ' A ', answer_text: ' 1/4' }, SEED_MC)).toEqual({
      ok: true,
    });
  });

  it.each([
    ['empty_question', { question: '  ' }],
    ['option_count', { options: ['1/4', '1/2', '1/6'] }],
    ['option_count', { options: ['1/4', '1/2', '1/6', '1/3', '1/5'] }],
    ['empty_option', { options: ['1/4', ' ', '1/6', '1/3'] }],
    ['duplicate_options', { options: ['1/4', '1/2', '1/4', '1/3'] }],
    ['duplicate_options', { options: ['1/4', '0.5', '1/6', '\\frac{1}{2}'] }],
    ['duplicate_options', { options: ['Paris', 'paris ', 'Rome', 'Berlin'] }],
    ['answer_letter', { answer_letter: 'E' }],
    ['answer_letter', { answer_letter: 'a' }],
    ['answer_letter', { answer_letter: '(A)' }],
    ['answer_letter', { answer_letter: '' }],
    ['answer_text_mismatch', { answer_text: '1/2' }],
    ['answer_text_mismatch', { answer_text: '0.25' }],
    ['answer_text_mismatch', { answer_text: 'A. 1/4' }],
    ['empty_explanation', { explanation: '' }],
  ] satisfies ReadonlyArray<[FormatRejection, Partial<EvolvedQuestion>]>)(
    'rejects with %s: %j',
    (reason, change) => {
      const check = checkEvolvedFormat({ ...GOOD, ...change }, SEED_MC);
      expect(check.ok).toBe(false);
      expect(check.ok ? null : check.reason).toBe(reason);
    },
  );

  it('wants the seed’s own option count, and four options for a free-answer seed', () => {
    const tenOptions = { options: Array.from({ length: 10 }, (_, i) => `${i}`) };
    expect(checkEvolvedFormat(GOOD, tenOptions)).toMatchObject({ ok: false, reason: 'option_count' });
    expect(checkEvolvedFormat(GOOD, { options: null })).toEqual({ ok: true });
    expect(checkEvolvedFormat({ ...GOOD, options: ['1/4', '1/2'] }, {})).toMatchObject({
      ok: false,
      reason: 'option_count',
    });
  });
});

function candidate(
  question: string,
  options: string[],
  seed: StudyQuestion = { question: 'Completely unrelated seed text', options: null },
): SimilarityCandidate {
  return {
    seed,
    evolved: { question, options, answer_letter: 'A', answer_text: options[0] ?? '', explanation: 'e' },
  };
}

describe('similarity filter', () => {
  it('measures token-set Jaccard similarity on lowercase letter and digit runs', () => {
    expect([...tokenSet('The sum, 3.14 of X_2 and the SUM!')].sort()).toEqual([
      '14',
      '2',
      '3',
      'and',
      'of',
      'sum',
      'the',
      'x',
    ]);
    expect(jaccardSimilarity(tokenSet('a b c'), tokenSet('b c d'))).toBeCloseTo(2 / 4, 12);
    expect(jaccardSimilarity(tokenSet(''), tokenSet(''))).toBe(1);
    expect(DEFAULT_SIMILARITY_THRESHOLD).toBe(0.7);
  });

  it('drops a paraphrase of its own seed and keeps a new question', () => {
    const seed = {
      question: 'A train travels 120 km in 2 hours. What is its average speed in km per hour?',
      options: ['60', '50', '40', '30'],
    };
    const paraphrase = candidate(
      'A train travels 120 km in 2 hours. What is the average speed in km per hour?',
      ['60', '50', '40', '30'],
      seed,
    );
    const fresh = candidate(
      'A cyclist rides for 3 hours at 15 km per hour, then rests. How far did she ride?',
      ['45 km', '30 km', '15 km', '60 km'],
      seed,
    );
    const [first, second] = filterBySimilarity([paraphrase, fresh]);
    expect(first).toMatchObject({ kept: false, reason: 'similar_to_seed', against: null });
    expect(first!.kept ? 0 : first!.similarity).toBeGreaterThanOrEqual(0.7);
    expect(second).toMatchObject({ kept: true });
    expect(second!.kept ? second!.seedSimilarity : 1).toBeLessThan(0.7);
  });

  it('keeps the earlier of two near-duplicates and names it, and labels exact duplicates', () => {
    const a = candidate('Find the derivative of x cubed plus two x at x equals one', ['5', '3', '1', '0']);
    const b = candidate('Find the derivative of x cubed plus two x at x equals two', ['14', '3', '1', '0']);
    const c = candidate('Find the derivative of x cubed plus two x at x equals one', ['5', '3', '1', '0']);
    const d = candidate('How many primes are there below twenty?', ['8', '7', '9', '6']);
    const decisions = filterBySimilarity([a, b, c, d]);
    expect(decisions[0]).toMatchObject({ kept: true });
    expect(decisions[1]).toMatchObject({ kept: false, reason: 'similar_to_kept', against: 0 });
    expect(decisions[2]).toMatchObject({
      kept: false,
      reason: 'duplicate_of_kept',
      similarity: 1,
      against: 0,
    });
    expect(decisions[3]).toMatchObject({ kept: true });
  });

  it('compares with kept questions only: a question close to a dropped one survives', () => {
    const seed = { question: 'alpha beta gamma delta epsilon zeta eta theta' };
    const dropped = candidate('alpha beta gamma delta epsilon zeta eta theta', [], seed);
    const next = candidate('alpha beta gamma delta epsilon zeta eta iota', []);
    const decisions = filterBySimilarity([dropped, next]);
    expect(decisions.map((d) => d.kept)).toEqual([false, true]);
  });

  it('keeps a candidate only strictly below the threshold, and refuses a threshold outside (0, 1]', () => {
    // Jaccard(a b c d, a b c e) = 3/5 = 0.6.
    const pair = [candidate('a b c d', []), candidate('a b c e', [])];
    expect(filterBySimilarity(pair, 0.6)[1]).toMatchObject({ kept: false, reason: 'similar_to_kept' });
    expect(filterBySimilarity(pair, 0.61)[1]).toMatchObject({ kept: true });
    expect(() => filterBySimilarity(pair, 0)).toThrow();
    expect(() => filterBySimilarity(pair, 1.5)).toThrow();
  });

  it('finds exactly the pairs a brute-force comparison finds (prefix filtering loses none)', () => {
    let state = 12345;
    const random = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const vocabulary = Array.from({ length: 14 }, (_, i) => `w${i}`);
    const candidates = Array.from({ length: 300 }, () => {
      const words = vocabulary.filter(() => random() < 0.45);
      return candidate(words.join(' '), []);
    });
    for (const threshold of [0.3, 0.5, 0.7, 0.85, 1]) {
      const expected: SimilarityDecision['kept'][] = [];
      const kept: ReadonlySet<string>[] = [];
      for (const c of candidates) {
        const own = tokenSet(c.evolved.question);
        const keep = own.size > 0 && kept.every((k) => jaccardSimilarity(own, k) < threshold);
        expected.push(keep);
        if (keep) kept.push(own);
      }
      expect(filterBySimilarity(candidates, threshold).map((d) => d.kept)).toEqual(expected);
    }
  });
});
