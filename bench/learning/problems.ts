/**
 * The learning bench's task family: single-digit additions ("What is 7 + 5?"), every ordered pair
 * of 1..9, split once by a seeded shuffle into training problems (rows of a Synthesis run, as GRPO
 * reads them) and held-out problems (a JSONL benchmark file, as Evaluation reads them).
 *
 * Chosen by measuring the embedded SmolLM2-135M-Instruct (transformers `generate` on the
 * de-quantized GGUF, groups of 4, 24 new tokens). With the shipped solve prompt (system prompt +
 * "think it through step by step ... \boxed{}") it answered none of 48 single-digit and 48
 * two-digit additions at 48 tokens, nor of 40 single-digit ones at 96: no reward to learn from. Asking
 * for one line "The answer is <number>": 1/40 at temperature 1, 9/40 at 0.7, and 2/40 with the
 * shipped system prompt. `complete-the-answer.md` without a system message (`no-system.md`) at
 * 0.7: 7/40 right, 33/40 with a readable answer, 4 of 10 groups with variance.
 */
import { writeFile } from 'node:fs/promises';

export interface AdditionProblem {
  readonly id: string;
  readonly question: string;
  readonly answer: string;
}

/** Every "What is a + b?" for a, b in 1..9, in a fixed order. */
export function additionProblems(): AdditionProblem[] {
  const out: AdditionProblem[] = [];
  for (let a = 1; a <= 9; a += 1) {
    for (let b = 1; b <= 9; b += 1) {
      out.push({ id: `add-${a}-${b}`, question: `What is ${a} + ${b}?`, answer: String(a + b) });
    }
  }
  return out;
}

/** A seeded Fisher-Yates shuffle (mulberry32), so a split is the same on every machine. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The first `heldOut` of the shuffled family are held out, the rest trained on. */
export function splitProblems(heldOut: number, seed: number) {
  const all = shuffled(additionProblems(), seed);
  return { heldOut: all.slice(0, heldOut), train: all.slice(heldOut) };
}

/** Writes problems as an Evaluation math data set (one `{id, question, answer}` per line). */
export async function writeBenchmarkFile(file: string, problems: readonly AdditionProblem[]): Promise<void> {
  await writeFile(file, problems.map((p) => JSON.stringify(p)).join('\n') + '\n');
}
