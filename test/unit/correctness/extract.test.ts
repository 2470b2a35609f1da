import { describe, expect, it } from 'vitest';
import { extractFinalAnswer, exactMatch, normalizeAnswer } from '../../../activities/correctness/index.js';

/** Final-answer extraction and search answer normalization: pure, hand-made cases. */

const answer = (text: string, lastLine = false) => extractFinalAnswer(text, { lastLine })?.answer ?? null;

describe('extractFinalAnswer', () => {
  it('takes the last \\boxed{} with nested and escaped braces', () => {
    expect(answer('So x = \\boxed{\\frac{1}{2}}.')).toBe('\\frac{1}{2}');
    expect(answer('First \\boxed{3}, then corrected: \\boxed{4}')).toBe('4');
    expect(answer('The set is \\boxed{\\{1, 2\\}}')).toBe('\\{1, 2\\}');
    expect(answer('$\\boxed{x^{2}+1}$')).toBe('x^{2}+1');
    expect(answer('\\fbox{7}')).toBe('7');
    expect(answer('\\boxed 5.')).toBe('5');
  });

  it('takes a final-answer line when nothing is boxed', () => {
    expect(answer('Work...\nFinal Answer: 42.')).toBe('42');
    expect(answer('Work...\n**Final answer:** $x^2$')).toBe('x^2');
    expect(answer('Therefore the final answer is \\(\\sqrt{2}\\).')).toBe('\\sqrt{2}');
    expect(answer('The answer is 7')).toBe('7');
    expect(answer('Answer: Canberra')).toBe('Canberra');
  });

  it('reads only what follows the reasoning block', () => {
    expect(answer('<think>maybe \\boxed{3}</think>\nThe answer is \\boxed{5}')).toBe('5');
    expect(answer('<think>maybe \\boxed{3}</think>\nno answer given')).toBeNull();
    expect(answer('<think>still thinking \\boxed{3}')).toBeNull();
  });

  it('finds nothing in a response without an answer, an empty box or an unclosed one', () => {
    expect(answer('I am not sure.')).toBeNull();
    expect(answer('\\boxed{}')).toBeNull();
    expect(answer('\\boxed{1 + ')).toBeNull();
    expect(answer(`\\boxed{${'9'.repeat(3_000)}}`)).toBeNull();
  });

  it('with lastLine, falls back to the last non-empty line (search answers)', () => {
    expect(answer('I searched.\nCanberra\n\n', true)).toBe('Canberra');
    expect(answer('I searched.\nCanberra\n\n')).toBeNull();
    expect(extractFinalAnswer('x\n\\boxed{Paris}', { lastLine: true })).toEqual({
      answer: 'Paris',
      from: 'boxed',
    });
  });
});

describe('normalized exact match', () => {
  it('folds case, accents, punctuation and articles, and nothing more', () => {
    expect(normalizeAnswer('The  Eiffel Tower.')).toBe('eiffel tower');
    expect(normalizeAnswer('São Paulo')).toBe('sao paulo');
    expect(normalizeAnswer('\\text{Marie Curie}')).toBe('marie curie');
    expect(exactMatch('the eiffel tower', 'Eiffel Tower')).toBe(true);
    expect(exactMatch('Eiffel Tower, Paris', 'Eiffel Tower')).toBe(false);
    expect(exactMatch('Sydney', 'Canberra')).toBe(false);
    expect(exactMatch('J. S. Bach', 'Johann Sebastian Bach', ['J S Bach'])).toBe(true);
    expect(exactMatch('...', '!!!')).toBe(false); // nothing left of either: no match
  });
});
