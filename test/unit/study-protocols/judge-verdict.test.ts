import { describe, expect, it } from 'vitest';
import { parseJudgeVerdict } from '../../../activities/study/protocols/answers.js';

describe('judge verdict parser', () => {
  it.each([
    ['A', true],
    ['B', false],
    [' A\n', true],
    ['B.', false],
    ['A!', true],
    ['CORRECT', true],
    ['INCORRECT', false],
    ['Correct.', true],
    ['incorrect', false],
    ['A: CORRECT', true],
    ['B: INCORRECT', false],
  ] as const)('reads %j as %s', (output, verdict) => {
    expect(parseJudgeVerdict(output)).toBe(verdict);
  });

  it.each([
    '',
    '   ',
    'a',
    'b',
    'C',
    'AB',
    'A B',
    'A: INCORRECT',
    'B: CORRECT',
    '"A"',
    '**A**',
    'A..',
    'The answer is A',
    'A. The candidate is correct',
    'CORRECT, because the values match',
    'NOT CORRECT',
    'PARTIALLY CORRECT',
    'CORRECT\nINCORRECT',
  ])('refuses %j (no verdict: the caller records a rejection)', (output) => {
    expect(parseJudgeVerdict(output)).toBeNull();
  });
});
