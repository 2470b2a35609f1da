import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MathVerdictSchema, type MathVerdict } from '../../schemas/reasoning-correctness.js';
import type { SandboxCaps } from '../../schemas/reasoning-sandbox.js';
import { runPython, type RunDependencies } from '../sandbox/index.js';
import { MathVerifierError } from './errors.js';

/** The verifier program (copied next to the compiled code by deploy/copy-assets.mjs). */
const PROGRAM_PATH = path.join(path.dirname(fileURLToPath(import.meta.url)), 'python', 'math_equivalence.py');
let program: string | undefined;

/**
 * Caps of a verifier run. Importing math-verify takes about 2 s of CPU; each pair has math-verify's
 * own 5 s timeouts, and a pathological answer (a tower of powers) that outruns them is stopped by
 * the CPU cap.
 */
const BATCH_CAPS: Partial<SandboxCaps> = { cpuSeconds: 60, wallSeconds: 120, memoryMiB: 2_048, processes: 4 };
const SINGLE_CAPS: Partial<SandboxCaps> = { cpuSeconds: 20, wallSeconds: 40, memoryMiB: 2_048, processes: 4 };

/** Caps of the batch run and of a pair run alone, over the defaults above. */
export interface VerifierCaps {
  readonly batch?: Partial<SandboxCaps>;
  readonly single?: Partial<SandboxCaps>;
}

/** A gold answer and an extracted answer to compare. */
export interface MathPair {
  readonly gold: string;
  readonly answer: string;
}

/**
 * Whether each answer is mathematically equivalent to its gold answer, by math-verify (0.9.0) run
 * in the sandbox: 1/2, 0.5 and \frac{1}{2} are equal; so are (x+1)^2 and x^2+2x+1, and {1,2} and
 * {2,1}. One sandbox run for the batch; a pair the batch run did not reach (the run hit a cap) is
 * run alone, and one that hits a cap alone is not equivalent, with the cap as its error.
 */
export async function verifyMath(
  deps: RunDependencies,
  pairs: readonly MathPair[],
  caps: VerifierCaps = {},
): Promise<MathVerdict[]> {
  const { verdicts } = await runBatch(deps, pairs, { ...BATCH_CAPS, ...caps.batch });
  for (let i = 0; i < pairs.length; i += 1) {
    if (verdicts[i]) continue;
    const alone = await runBatch(deps, [pairs[i]!], { ...SINGLE_CAPS, ...caps.single });
    verdicts[i] = alone.verdicts[0]
      ? { ...alone.verdicts[0], index: i }
      : { index: i, equivalent: false, gold: null, answer: null, error: `the verifier was ${alone.killed}` };
  }
  return verdicts as MathVerdict[];
}

/**
 * The verdicts one run printed, by index; a run killed on a cap leaves the rest undefined and
 * says which cap in `killed`.
 */
async function runBatch(
  deps: RunDependencies,
  pairs: readonly MathPair[],
  caps: Partial<SandboxCaps>,
): Promise<{ verdicts: (MathVerdict | undefined)[]; killed: string | null }> {
  program ??= readFileSync(PROGRAM_PATH, 'utf8');
  const run = await runPython(deps, {
    code: program,
    stdin: JSON.stringify({ pairs: pairs.map(({ gold, answer }) => ({ gold, answer })) }),
    caps: { outputBytes: 1_024 * 1_024, ...caps },
  });
  if (run.outcome === 'error') {
    throw new MathVerifierError(`${run.message}: ${run.stderr.slice(-1_000)}`);
  }
  const verdicts: (MathVerdict | undefined)[] = new Array(pairs.length).fill(undefined);
  const lines = run.stdout.split('\n').filter(Boolean);
  // A killed run may end in a half-written line: only whole lines before it count.
  const whole = run.outcome === 'killed' && !run.stdout.endsWith('\n') ? lines.slice(0, -1) : lines;
  for (const line of whole) {
    let verdict: MathVerdict;
    try {
      verdict = MathVerdictSchema.parse(JSON.parse(line));
    } catch {
      throw new MathVerifierError(`it printed a line that is not a verdict: ${line.slice(0, 200)}`);
    }
    if (verdict.index >= pairs.length)
      throw new MathVerifierError(`verdict for pair ${verdict.index} of ${pairs.length}`);
    verdicts[verdict.index] = verdict;
  }
  if (run.outcome === 'ok' && verdicts.some((v) => v === undefined)) {
    throw new MathVerifierError(
      `it ended without a verdict for every pair (${whole.length} of ${pairs.length})`,
    );
  }
  return { verdicts, killed: run.outcome === 'killed' ? run.message : null };
}
