import type { Reply, ScriptedRequest } from './model-server.js';

/**
 * A scripted teacher for reasoning synthesis over the shipped seed file
 * (examples/reasoning/seeds.jsonl). The rewrite call answers with the persona's request holding
 * the seed question word for word; the solve calls of a problem answer, in the order they arrive,
 * with the responses listed for its question below. Most problems get equivalent answers written
 * differently (so agreement needs math-verify or normalization, not string equality); some are
 * scripted to be dropped, one for each reason that needs no failing model.
 */
export interface Plan {
  readonly responses: readonly string[];
  /** What the run must end with for this problem. */
  readonly expected:
    'kept' | 'answers_disagree' | 'source_mismatch' | 'unparseable_answer' | 'rewrite_failed';
  /** The teacher's rewrite comes back empty (the problem is dropped before any solution). */
  readonly emptyRewrite?: boolean;
}

const boxed = (answer: string) => `Working it through step by step gives the result.\n\n\\boxed{${answer}}`;
const stated = (answer: string) => `I looked this up and checked two sources.\nFinal answer: ${answer}`;

/** Keyed by the seed question, as written in the shipped seed file. */
export const REASONING_PLANS: Readonly<Record<string, Plan>> = {
  'What is the sum of the first 50 positive integers?': {
    responses: [boxed('1275'), boxed('1275.0'), boxed('\\frac{2550}{2}')],
    expected: 'kept',
  },
  'Solve for x: 3x + 7 = 22.': {
    responses: [boxed('5'), boxed('x = 5'), 'So 3x = 15 and the final answer is 5'],
    expected: 'kept',
  },
  'A rectangle has a perimeter of 36 cm and its length is twice its width. What is its area in square centimetres?':
    {
      // Consistent, and wrong: 8 x 8 is not twice as long as wide.
      responses: [boxed('64'), boxed('64'), boxed('64')],
      expected: 'source_mismatch',
    },
  'What is the probability of getting exactly two heads in three tosses of a fair coin? Give the answer as a fraction.':
    {
      responses: [boxed('\\frac{3}{8}'), boxed('0.375'), boxed('3/8')],
      expected: 'kept',
    },
  'In how many different orders can 5 different books be arranged on a shelf?': {
    responses: [boxed('120'), 'There are 5! arrangements, which is a lot of them.', boxed('120')],
    expected: 'unparseable_answer',
  },
  'What is the remainder when 2^10 is divided by 7?': {
    responses: [boxed('2'), boxed('4'), boxed('2')],
    expected: 'answers_disagree',
  },
  'What is the least common multiple of 12 and 18?': {
    // No seed answer: agreement among the solutions is all that is asked.
    responses: [boxed('36'), boxed('36.0'), boxed('36')],
    expected: 'kept',
  },
  'Which chemical element has the symbol Fe?': {
    responses: [stated('Iron'), stated('iron.'), stated('IRON')],
    expected: 'kept',
  },
  'In which city is the Eiffel Tower?': {
    responses: [stated('Paris'), stated('paris'), stated('Paris!')],
    expected: 'kept',
  },
  'Who wrote the novel Pride and Prejudice?': {
    responses: [stated('Jane Austen'), stated('jane austen'), stated('Jane Austen.')],
    expected: 'kept',
  },
  'What is the capital city of Australia?': {
    responses: [stated('Canberra'), stated('Sydney'), stated('Canberra')],
    expected: 'answers_disagree',
  },
};

const text = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content ?? ''));

/** Whether a request is one of reasoning synthesis (a rewrite or a solution), by its prompt. */
export function isReasoningRequest(request: ScriptedRequest): boolean {
  const prompt = text(request.body.messages.at(-1)?.content);
  return prompt.startsWith('Rewrite the problem below') || prompt.startsWith('Solve the following');
}

/**
 * A scripted teacher over {@link REASONING_PLANS} and `extra` plans: call it with every reasoning
 * request of the model server (it keeps the solve counts).
 */
export function reasoningScript(
  extra: Readonly<Record<string, Plan>> = {},
): (request: ScriptedRequest) => Reply {
  const plans = { ...REASONING_PLANS, ...extra };
  const solved = new Map<string, number>();
  return (request) => {
    const prompt = text(request.body.messages.at(-1)?.content);
    const question = Object.keys(plans).find((q) => prompt.includes(q));
    if (question === undefined) throw new Error(`no scripted reasoning problem in: ${prompt.slice(0, 200)}`);
    if (prompt.startsWith('Rewrite the problem below')) {
      if (plans[question]!.emptyRewrite) return '';
      const persona = /The person:\n(.*)\n/.exec(prompt)?.[1] ?? 'someone';
      return `I am ${persona.replace(/^An? /, 'a ').replace(/\.$/, '')}. Could you help me with this? ${question}`;
    }
    const n = solved.get(question) ?? 0;
    solved.set(question, n + 1);
    const plan = plans[question]!;
    return plan.responses[n % plan.responses.length]!;
  };
}
