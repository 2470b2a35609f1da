import { describe, expect, it } from 'vitest';
import { controlAnswers, wrongAnswer } from '../../../activities/study/judge-controls.js';
import { exactMatch } from '../../../activities/study/protocols/answers.js';
import type { StudyQuestion } from '../../../activities/study/questions.js';

const q = (questionId: string, answer: string, options: string[] | null = null): StudyQuestion => ({
  questionId,
  domain: 'd',
  question: `question ${questionId}`,
  answer,
  options,
});

describe('judge control answers', () => {
  const others = [q('a', 'Paris'), q('b', 'paris'), q('c', 'Jupiter')];

  it('writes a wrong answer no checker could call right: another option, another number, another reference', () => {
    expect(wrongAnswer(q('mc', 'B', ['21', '29', '33']), others)).toBe('C');
    expect(wrongAnswer(q('mc-last', 'C', ['21', '29', '33']), others)).toBe('A');
    expect(wrongAnswer(q('mc-text', '29', ['21', '29', '33']), others)).toBe('C');
    expect(wrongAnswer(q('n', '43'), others)).toBe('86');
    expect(wrongAnswer(q('zero', '0'), others)).toBe('1');
    expect(wrongAnswer(q('neg', '-1'), others)).toBe('0');
    // Another question's reference, skipping one that says the same thing in another case.
    expect(wrongAnswer(q('a', 'Paris'), others)).toBe('Jupiter');
    expect(wrongAnswer(q('only', 'Paris'), [q('only', 'Paris')])).toBe('I do not know.');
  });

  it('pairs the reference (expected CORRECT) with the wrong answer (expected INCORRECT), both boxed', () => {
    const question = q('mc', 'B', ['21', '29', '33']);
    const [reference, wrong] = controlAnswers(question, others);
    expect(reference).toEqual({
      kind: 'reference',
      response: 'The final answer is \\boxed{B}.',
      expected: true,
    });
    expect(wrong).toEqual({ kind: 'wrong', response: 'The final answer is \\boxed{C}.', expected: false });
    // The checker agrees with both expectations where it can decide: the controls are sound.
    expect(exactMatch(question, question.answer, reference!.response)).toBe('correct');
    expect(exactMatch(question, question.answer, wrong!.response)).toBe('incorrect');
    const numeric = q('n', '43');
    const [, wrongNumber] = controlAnswers(numeric, others);
    expect(exactMatch(numeric, numeric.answer, wrongNumber!.response)).toBe('incorrect');
  });
});
