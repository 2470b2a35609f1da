/**
 * The exact-answer family (docs/adding-a-benchmark.md) and the registry's spec side: answers are
 * read and normalized as documented, and an Evaluation spec refuses bad family settings at start,
 * naming the field.
 */
import { describe, expect, it } from 'vitest';
import { finalAnswer, normalizeAnswer } from '../../../activities/evaluation/benchmarks/exact-answer.js';
import { LOCAL_BENCHMARKS } from '../../../activities/evaluation/benchmarks/index.js';
import { EvaluationSpecSchema } from '../../../schemas/evaluation-spec.js';
import { LOCAL_BENCHMARK_NAMES } from '../../../schemas/local-benchmarks.js';

describe('the exact-answer benchmark family', () => {
  it('reads the last "Answer:" line, else the last \\boxed{}, else the last line', () => {
    expect(finalAnswer('Thinking.\nAnswer: 12\nAnswer: 42')).toBe('42');
    expect(finalAnswer('so \\boxed{7} and then \\boxed{8}')).toBe('8');
    expect(finalAnswer('first line\n  Paris  ')).toBe('Paris');
  });

  it('normalizes whitespace, quotes, a final period and (unless asked) case', () => {
    expect(normalizeAnswer('  "Paris." ', false)).toBe('paris');
    expect(normalizeAnswer('New   York', true)).toBe('New York');
    expect(normalizeAnswer('$x^2$', false)).toBe('x^2');
  });

  it('scores 1 for the gold answer or an alias and 0 otherwise', async () => {
    const problem = { id: 'p', question: 'Formula of water?', answer: 'H2O', aliases: ['H₂O'] };
    const settings = { system: 'Answer.', caseSensitive: false };
    const score = (reply: string) =>
      LOCAL_BENCHMARKS.exact.runTrial({
        problem,
        settings,
        ask: async () => ({ text: reply, finishReason: 'stop' }),
      });
    expect((await score('Answer: h₂o')).reward).toBe(1);
    expect((await score('Answer: H2O2')).reward).toBe(0);
  });
});

describe('the benchmark registry in an Evaluation spec', () => {
  const base = {
    kind: 'Evaluation',
    policy: { endpoint: { baseUrl: 'http://127.0.0.1:9/v1', model: 'm' } },
  };

  it('has an implementation for every registered family', () => {
    expect(Object.keys(LOCAL_BENCHMARKS).sort()).toEqual([...LOCAL_BENCHMARK_NAMES].sort());
  });

  it('fills a family entry with its defaults and refuses bad settings, naming the field', () => {
    const spec = EvaluationSpecSchema.parse({
      ...base,
      benchmarks: { exact: { datasets: [{ name: 'qa', path: 'qa.jsonl' }] } },
    });
    expect(spec.benchmarks.exact).toMatchObject({ trials: 4, settings: { caseSensitive: false } });
    const bad = EvaluationSpecSchema.safeParse({
      ...base,
      benchmarks: {
        exact: { datasets: [{ name: 'qa', path: 'qa.jsonl' }], settings: { caseSensitiv: true } },
      },
    });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error!.issues)).toMatch(/benchmarks.*exact.*settings|caseSensitiv/);
  });
});
