/**
 * The exact-answer benchmark family (schemas/benchmarks/exact-answer.ts): one question, one policy
 * turn without tools, reward 1 when the final answer equals the gold answer or an alias after
 * normalization. The example of docs/adding-a-benchmark.md: a family is its settings schema and
 * this one function, registered in ./index.ts.
 */
import type { ExactAnswerSettingsSchema } from '../../../schemas/benchmarks/exact-answer.js';
import type { LocalBenchmark } from './family.js';

/** The reply's final answer: after its last "Answer:", else its last \boxed{}, else its last line. */
export function finalAnswer(reply: string): string {
  const marked = [...reply.matchAll(/answer\s*[:：]\s*(.+)/gi)].at(-1)?.[1];
  if (marked !== undefined) return marked;
  const boxed = [...reply.matchAll(/\\boxed\{([^{}]*)\}/g)].at(-1)?.[1];
  if (boxed !== undefined) return boxed;
  return reply.trim().split('\n').at(-1)?.trim() ?? '';
}

/** Whitespace collapsed, surrounding quotes, `$`, `*` and a final period dropped; folded unless case counts. */
export function normalizeAnswer(answer: string, caseSensitive: boolean): string {
  const text = answer
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[\s"'`*$]+|[\s"'`*$]+$/g, '')
    .replace(/\.$/, '')
    .trim();
  return caseSensitive ? text : text.toLowerCase();
}

export const exactAnswer: LocalBenchmark<typeof ExactAnswerSettingsSchema> = {
  async runTrial({ ask, problem, settings }) {
    const reply = await ask([
      { role: 'system', content: settings.system },
      { role: 'user', content: problem.question },
    ]);
    const answer = normalizeAnswer(finalAnswer(reply.text), settings.caseSensitive);
    const gold = [problem.answer, ...problem.aliases].map((g) => normalizeAnswer(g, settings.caseSensitive));
    const correct = gold.includes(answer);
    return {
      reward: correct ? 1 : 0,
      detail: `answer ${JSON.stringify(answer.slice(0, 200))} ${correct ? 'matches' : 'does not match'} ${JSON.stringify(gold[0]!.slice(0, 200))}`,
    };
  },
};
