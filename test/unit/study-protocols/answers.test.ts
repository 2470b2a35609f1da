import { describe, expect, it } from 'vitest';
import { exactMatch, extractFinalAnswer } from '../../../activities/study/protocols/answers.js';
import type { FastVerdict } from '../../../schemas/study-verdict.js';

const MC = ['1/2', '1/3', '2/3', '3/4'];

describe('final-answer extraction', () => {
  it('takes the last \\boxed{} and keeps its nested braces', () => {
    const response =
      'First \\boxed{\\frac{1}{2}}, then on reflection \\boxed{\\frac{\\sqrt{3}}{2}} is right.';
    expect(extractFinalAnswer(response)).toEqual({ text: '\\frac{\\sqrt{3}}{2}', source: 'boxed' });
  });

  it('does not let escaped braces close a box, and reads \\fbox too', () => {
    expect(extractFinalAnswer('so \\boxed{\\{1, 2\\}}')?.text).toBe('\\{1, 2\\}');
    expect(extractFinalAnswer('so \\fbox{7}')?.text).toBe('7');
  });

  it('reads an explicit answer line when there is no box, the last one winning', () => {
    expect(extractFinalAnswer('The answer is 3.\nWait.\nFinal answer: 4')).toEqual({
      text: '4',
      source: 'answer_line',
    });
    expect(extractFinalAnswer('Thus the final answer is 42.')?.text).toBe('42.');
    expect(extractFinalAnswer('**Answer:** 12')?.text).toBe('12');
  });

  it('takes the next non-empty line after an empty "Final answer:" line', () => {
    expect(extractFinalAnswer('work\n\n## Final Answer:\n\n  x = 9\n')?.text).toBe('x = 9');
  });

  it('reads a lone option letter on the last line only for a multiple-choice question', () => {
    expect(extractFinalAnswer('Comparing the options...\n\n(C)', MC)).toEqual({
      text: '(C)',
      source: 'lone_letter',
    });
    expect(extractFinalAnswer('Comparing the options...\n\nC', [])).toBeNull();
    expect(extractFinalAnswer('Comparing the options...\n\nF', MC)).toBeNull();
  });

  it('returns null when the response has no final answer', () => {
    expect(extractFinalAnswer('I am not sure how to proceed.')).toBeNull();
    expect(extractFinalAnswer('')).toBeNull();
  });
});

type Row = readonly [gold: string, response: string, expected: FastVerdict, note: string];

const FREE_ANSWER: readonly Row[] = [
  ['1/2', '\\boxed{0.5}', 'correct', 'a fraction equals its decimal'],
  ['0.5', 'so $\\boxed{\\dfrac{1}{2}}$.', 'correct', 'a \\dfrac inside math delimiters'],
  ['\\frac{1}{2}', '\\boxed{\\frac12}', 'correct', '\\frac12 shorthand'],
  ['-\\frac{3}{4}', '\\boxed{\\frac{-3}{4}}', 'correct', 'the sign inside or outside the fraction'],
  ['x^2', '\\boxed{x^2}', 'correct', 'identical expressions'],
  ['x^2', '\\boxed{x \\cdot x}', 'undecided', 'an equivalent expression is for the judge'],
  ['x^2 + 1', '\\boxed{x^2+1}', 'correct', 'identical up to spaces'],
  ['1234', '\\boxed{1,234}', 'correct', 'a thousands separator'],
  ['1234567', '\\boxed{1{,}234{,}567}', 'correct', 'LaTeX {,} separators'],
  ['1234', '\\boxed{1\\,234}', 'correct', 'a LaTeX thin space separator'],
  ['1.5', '\\boxed{1,5}', 'undecided', 'a decimal comma is not a thousands group'],
  ['-3', '\\boxed{-3}', 'correct', 'a negative integer'],
  ['−3', '\\boxed{-3}', 'correct', 'a Unicode minus'],
  ['-3', '\\boxed{3}', 'incorrect', 'the sign matters'],
  ['2', '\\boxed{3}', 'incorrect', 'different integers'],
  ['3.14', '\\boxed{3.15}', 'incorrect', 'different at the last written digit'],
  ['0.3', '\\boxed{0.30}', 'correct', 'a trailing zero'],
  ['0', '\\boxed{0.0}', 'correct', 'zero'],
  ['50%', '\\boxed{0.5}', 'correct', 'a percentage equals its fraction'],
  ['0.25', '\\boxed{25\\%}', 'correct', 'a LaTeX percent sign'],
  ['50%', '\\boxed{50}', 'undecided', 'a dropped percent sign is ambiguous'],
  ['0.5%', '\\boxed{0.5}', 'undecided', 'a percent value without its sign is ambiguous'],
  ['50%', '\\boxed{0.6}', 'incorrect', 'wrong under both readings of the percentage'],
  ['40%', '\\boxed{40\\%}', 'correct', 'two percentages'],
  ['1.2e-3', '\\boxed{1.2 \\times 10^{-3}}', 'correct', 'scientific notation, two spellings'],
  ['0.0012', '\\boxed{1.2E-3}', 'correct', 'e-notation against a decimal'],
  ['10^{5}', '\\boxed{100000}', 'correct', 'a power of ten'],
  [
    '6.02 \\times 10^{23}',
    '\\boxed{6.0 \\times 10^{23}}',
    'undecided',
    'a coarser rounding in scientific notation',
  ],
  ['6.02 \\times 10^{23}', '\\boxed{6.1 \\times 10^{23}}', 'incorrect', 'off beyond both roundings'],
  ['1/3', '\\boxed{0.333}', 'undecided', 'a rounded decimal of a fraction'],
  ['0.33', '\\boxed{\\frac{1}{3}}', 'undecided', 'a rounded gold against the exact value'],
  ['2.5', '\\boxed{3}', 'undecided', 'an integer that may round the gold'],
  ['1/3', '\\boxed{0.3}', 'undecided', 'a one-digit rounding'],
  ['1/3', '\\boxed{0.34}', 'incorrect', 'not a rounding of 1/3'],
  ['5', 'The answer is 5.', 'correct', 'an answer line with a full stop'],
  ['5', 'Final Answer: x = 5', 'correct', 'an assignment to one variable'],
  ['12', '**Answer:** 12', 'correct', 'Markdown bold around the answer line'],
  ['7', '\\boxed{\\boxed{7}}', 'correct', 'a nested box'],
  ['\\{1, 2\\}', 'hence \\boxed{\\{1, 2\\}}', 'correct', 'identical sets with escaped braces'],
  ['5 m/s', '\\boxed{5}', 'undecided', 'a gold with a unit'],
  ['5', '\\boxed{5\\text{ m/s}}', 'undecided', 'an answer with a unit'],
  ['3 1/2', '\\boxed{3.5}', 'undecided', 'a mixed number'],
  ['5', 'I could not finish.', 'incorrect', 'no final answer to a numeric gold'],
  ['Paris', 'I could not finish.', 'undecided', 'no final answer to a gold no checker reads'],
  ['5', 'so the result is \\boxed{5', 'undecided', 'a box cut off before its closing brace'],
  ['5', '\\boxed{4} is wrong, so \\boxed{5', 'undecided', 'a complete box before a cut-off one'],
  ['4', 'either \\boxed{3} or \\boxed{4}', 'undecided', 'a hedge between a wrong and a right box'],
  ['4', 'step \\boxed{3}, final \\boxed{5}', 'incorrect', 'every box wrong'],
  ['4', 'step \\boxed{4}, final \\boxed{4.0}', 'correct', 'every box right'],
  ['5', 'The answer is 5 because of symmetry', 'undecided', 'an answer line with prose after the answer'],
  ['1/0', '\\boxed{1/0}', 'correct', 'identical text even when it is not a number'],
  ['1/0', '\\boxed{2}', 'undecided', 'a gold that is not a valid number'],
];

const MULTIPLE_CHOICE: readonly Row[] = [
  ['B', '\\boxed{B}', 'correct', 'the gold letter'],
  ['B', '\\boxed{C}', 'incorrect', 'another letter'],
  ['B', '\\boxed{1/3}', 'correct', "the gold option's text"],
  ['1/3', '\\boxed{B}', 'correct', 'a gold given as option text'],
  ['B', '\\boxed{0.5}', 'incorrect', "exactly option A's value"],
  ['B', '\\boxed{0.33}', 'undecided', 'a value that is no option exactly'],
  ['B', '\\boxed{\\text{(B)}}', 'correct', 'a parenthesised letter in \\text'],
  ['B', '\\boxed{B. 1/3}', 'correct', "a letter with its option's text"],
  ['B', '\\boxed{B. 2/3}', 'undecided', "a letter with another option's text"],
  ['B', 'Comparing them...\n\nB', 'correct', 'a lone letter on the last line'],
  ['B', 'Comparing them...\n\n(C)', 'incorrect', 'a lone wrong letter'],
  ['B', 'The correct option is C.', 'incorrect', 'an answer line naming a letter'],
  ['B', 'Answer: Option B', 'correct', '"Option B"'],
  ['B', '\\boxed{E}', 'undecided', 'a letter beyond the options'],
  ['B', '\\boxed{B and C}', 'undecided', 'several letters'],
  ['B', '\\boxed{b}', 'undecided', 'a lowercase lone letter may be a variable'],
  ['B', 'It is one of them.', 'incorrect', 'no final answer'],
  ['7/8', 'It is one of them.', 'undecided', 'no final answer to a gold that names no option'],
  ['7/8', '\\boxed{B}', 'undecided', 'a gold that names no option'],
];

describe('exact-match fast path', () => {
  it.each(FREE_ANSWER)('free answer: gold %j, response %j → %s (%s)', (gold, response, expected) => {
    expect(exactMatch({}, gold, response)).toBe(expected);
  });

  it.each(MULTIPLE_CHOICE)('multiple choice: gold %j, response %j → %s (%s)', (gold, response, expected) => {
    expect(exactMatch({ options: MC }, gold, response)).toBe(expected);
  });

  it('matches option text without case and spaces, and refuses options that say the same', () => {
    const cities = ['Paris', 'London', 'Rome', 'Berlin'];
    expect(exactMatch({ options: cities }, 'C', 'It is \\boxed{rome}.')).toBe('correct');
    expect(exactMatch({ options: cities }, 'Rome', 'Answer: A')).toBe('incorrect');
    expect(exactMatch({ options: ['1', '1', '2', '3'] }, 'A', '\\boxed{1}')).toBe('undecided');
  });

  it('treats null or empty options as a free-answer question', () => {
    expect(exactMatch({ options: null }, 'B', '\\boxed{B}')).toBe('correct');
    expect(exactMatch({ options: [] }, '2', '\\boxed{3}')).toBe('incorrect');
  });

  it('never calls a blank gold correct', () => {
    expect(exactMatch({}, '  ', '\\boxed{}')).toBe('undecided');
  });
});
