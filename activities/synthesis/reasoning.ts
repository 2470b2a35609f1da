import type pg from 'pg';
import type { WaitingModelRole } from '../../schemas/model-endpoint.js';
import {
  type ReasoningDropReason,
  type ReasoningProblemResult,
  type ReasoningSolution,
} from '../../schemas/reasoning-synthesis.js';
import type { ReasoningKind } from '../../schemas/reasoning-correctness.js';
import { extractFinalAnswer } from '../correctness/extract.js';
import { verifyMath, type MathPair } from '../correctness/math-verify.js';
import { exactMatch } from '../correctness/search-match.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import { StructuredOutputRejectedError, type ModelClient } from '../llm/index.js';
import type { RunDependencies } from '../sandbox/index.js';
import { loadTemplate, renderTemplate, type TemplateChoice } from '../templates/templates.js';
import { SynthesisStageError } from './errors.js';
import { problemIdOf } from './reasoning-seeds.js';
/** Longest rewritten problem kept, in bytes (a longer one is a failed rewrite). */
export const MAX_SCENARIO_BYTES = 16 * 1024;
/** Longest solution read, in bytes (a longer one has no readable answer). */
export const MAX_SOLUTION_BYTES = 64 * 1024;

const REWRITE_SYSTEM =
  'You turn textbook problems into realistic requests from real people without changing what is asked. ' +
  'Answer with the rewritten request only.';

/** How each kind's final answer must be written, so the correctness extractor can read it. */
const ANSWER_FORMAT: Record<ReasoningKind, string> = {
  math: 'End with the final answer alone inside \\boxed{}, e.g. \\boxed{42}.',
  search:
    'End with one line "Final answer: <the short answer>" (a name, date, number or phrase, no sentence).',
};

/**
 * The opening of a solve: the system prompt and the `reasoningSolve` template rendered for the
 * problem. The teacher's solutions (synthesis) and the policy's rollouts (GRPO) open alike, so the
 * policy is trained on the prompt its demonstrations were made with.
 */
export async function solveMessages(
  kind: ReasoningKind,
  scenario: string,
  templates: TemplateChoice,
): Promise<Array<{ role: 'system' | 'user'; content: string }>> {
  const template = await loadTemplate('reasoningSolve', templates);
  // An empty system template (an override file with nothing in it) sends no system message.
  const system = renderTemplate(await loadTemplate('reasoningSolveSystem', templates), {}).trim();
  const prompt = renderTemplate(template, { kind, question: scenario, answerFormat: ANSWER_FORMAT[kind] });
  return [
    ...(system ? [{ role: 'system' as const, content: system }] : []),
    { role: 'user', content: prompt },
  ];
}

/** One problem to synthesize. */
export interface ReasoningProblemInput {
  readonly runId: string;
  /** The problem's index among the run's valid seed problems. */
  readonly idx: number;
  /** Teacher solutions to draw. */
  readonly solutions: number;
  /** false: solve the seed question as written. Absent (older workflows): true. */
  readonly rewrite?: boolean;
  /** How a problem is kept (schemas/reasoning-synthesis.ts). Absent (older workflows): agreement. */
  readonly keep?: 'agreement' | 'correct';
  /** Its calls stay online whatever its mode: a solution's turns need their answers now. */
  readonly teacher: WaitingModelRole;
  readonly templates: TemplateChoice;
  /** Seed of this problem's calls when the teacher role sets none. */
  readonly seed: number;
}

/** What synthesizing a problem needs from the worker. */
export interface ReasoningDependencies {
  readonly pool: pg.Pool;
  readonly models: ModelClient;
  /** The sandbox math-verify runs in. */
  readonly sandbox: () => RunDependencies;
  readonly signal?: AbortSignal;
}

interface ProblemRow {
  problem_id: string;
  kind: ReasoningKind;
  source_question: string;
  source_answer: string | null;
  outcome: 'pending' | 'kept' | 'rejected' | 'failed';
  drop_reason: ReasoningDropReason | null;
}

type Decision =
  | { readonly outcome: 'kept'; readonly answer: string }
  | { readonly outcome: 'rejected'; readonly reason: ReasoningDropReason; readonly detail: string };

const storedResult = (row: ProblemRow): ReasoningProblemResult =>
  row.outcome === 'kept' ? { outcome: 'kept' } : { outcome: 'rejected', reason: row.drop_reason! };

/**
 * One reasoning problem (seed 000 §3.4): the teacher rewrites it into a scenario of a persona
 * (`rewrite: false`: the seed question is the scenario), solves the scenario `solutions` times
 * (separate calls with sample indices 0..n-1, so the ledger caches each apart), and the problem is
 * kept only when every final answer is equivalent to every other (math-verify in the sandbox for
 * math, normalized exact match for search) and to the seed's answer when it has one. Under `keep:
 * correct` (rejection sampling) each solution is marked by whether it matches the seed's answer and
 * the problem is kept when one does. The outcome and every artefact go to its row once; a problem
 * already decided is returned as stored, and a retry's model calls are served from the ledger.
 */
export async function synthesizeReasoningProblem(
  deps: ReasoningDependencies,
  input: ReasoningProblemInput,
): Promise<ReasoningProblemResult> {
  const problemId = problemIdOf(input.runId, input.idx);
  const row = await readProblem(deps.pool, problemId);
  // A failed problem (its activity gave up in an earlier run) is tried again; a decided one is not.
  if (row.outcome === 'kept' || row.outcome === 'rejected') return storedResult(row);

  const persona = await personaFor(deps.pool, input.runId, input.idx, problemId);
  const teacher = (seed: number) => ({
    endpoint: resolveEndpoint(input.teacher.endpoint),
    sampling: { ...input.teacher.sampling, seed: input.teacher.sampling.seed ?? seed },
    runId: problemId,
    role: 'teacher',
    signal: deps.signal,
  });

  const scenario =
    input.rewrite === false ? row.source_question : await rewriteProblem(deps, input, row, persona, teacher);
  if (typeof scenario !== 'string') {
    await decide(deps.pool, problemId, persona.id, null, [], scenario);
    return storedResult(await readProblem(deps.pool, problemId));
  }

  const messages = await solveMessages(row.kind, scenario, input.templates);
  const solutions = await Promise.all(
    Array.from({ length: input.solutions }, async (_, sampleIndex): Promise<ReasoningSolution> => {
      let response: string;
      try {
        const solved = await deps.models.text(
          {
            ...teacher(input.seed + sampleIndex),
            sampleIndex,
            messages,
          },
          'reasoningSolve',
          MAX_SOLUTION_BYTES,
        );
        response = solved.text;
      } catch (error) {
        if (!(error instanceof StructuredOutputRejectedError)) throw error;
        response = '';
      }
      const extracted = extractFinalAnswer(response, { lastLine: row.kind === 'search' });
      return { sampleIndex, response, answer: extracted?.answer ?? null };
    }),
  );

  if (input.keep === 'correct') {
    const { marked, decision } = await judgeCorrect(deps, row, solutions);
    await decide(deps.pool, problemId, persona.id, scenario, marked, decision);
    return storedResult(await readProblem(deps.pool, problemId));
  }
  const decision = await judgeAgreement(deps, row, solutions);
  await decide(deps.pool, problemId, persona.id, scenario, solutions, decision);
  return storedResult(await readProblem(deps.pool, problemId));
}

/** The teacher's rewrite of the seed question into a persona scenario, or why there is none. */
async function rewriteProblem(
  deps: ReasoningDependencies,
  input: ReasoningProblemInput,
  row: ProblemRow,
  persona: { readonly persona: string },
  teacher: (seed: number) => Omit<Parameters<ModelClient['text']>[0], 'messages'>,
): Promise<string | Extract<Decision, { outcome: 'rejected' }>> {
  const rewriteTemplate = await loadTemplate('reasoningRewrite', input.templates);
  let detail = 'the rewrite was empty';
  try {
    const rewritten = await deps.models.text(
      {
        ...teacher(input.seed),
        messages: [
          { role: 'system', content: REWRITE_SYSTEM },
          {
            role: 'user',
            content: renderTemplate(rewriteTemplate, {
              persona: persona.persona,
              kind: row.kind,
              question: row.source_question,
            }),
          },
        ],
      },
      'reasoningRewrite',
      MAX_SCENARIO_BYTES,
    );
    const scenario = afterReasoning(rewritten.text).trim();
    if (scenario) return scenario;
  } catch (error) {
    if (!(error instanceof StructuredOutputRejectedError)) throw error;
    detail = `the rewrite was refused: ${error.reason}`;
  }
  return { outcome: 'rejected', reason: 'rewrite_failed', detail };
}

/**
 * Rejection sampling (`keep: correct`): each solution is marked by whether its answer matches the
 * seed's, and the problem is kept when one does; its matching solutions are its demonstrations.
 */
async function judgeCorrect(
  deps: ReasoningDependencies,
  row: ProblemRow,
  solutions: readonly ReasoningSolution[],
): Promise<{ marked: ReasoningSolution[]; decision: Decision }> {
  if (row.source_answer === null) {
    const detail = "keep: correct needs the seed line's answer to check the solutions against";
    return {
      marked: [...solutions],
      decision: { outcome: 'rejected', reason: 'no_correct_solution', detail },
    };
  }
  const readable = solutions.filter((s) => s.answer !== null);
  const pairs = readable.map((s) => ({ gold: row.source_answer!, answer: s.answer! }));
  const verdicts =
    row.kind === 'math'
      ? (await verifyMath(deps.sandbox(), pairs)).map((v) => v.equivalent)
      : pairs.map((pair) => exactMatch(pair.answer, pair.gold));
  const correct = new Set(readable.filter((_, i) => verdicts[i]).map((s) => s.sampleIndex));
  const marked = solutions.map((s) => ({ ...s, correct: correct.has(s.sampleIndex) }));
  if (correct.size === 0) {
    const listed = solutions.map((s) => `${s.sampleIndex}: ${JSON.stringify(s.answer)}`).join('; ');
    const detail = `no solution matches the seed's answer ${JSON.stringify(row.source_answer)} (${listed})`;
    return { marked, decision: { outcome: 'rejected', reason: 'no_correct_solution', detail } };
  }
  return { marked, decision: { outcome: 'kept', answer: row.source_answer } };
}

/** Whether the solutions' answers agree with each other and with the seed's answer. */
async function judgeAgreement(
  deps: ReasoningDependencies,
  row: ProblemRow,
  solutions: readonly ReasoningSolution[],
): Promise<Decision> {
  const unreadable = solutions.filter((s) => s.answer === null).map((s) => s.sampleIndex);
  if (unreadable.length > 0) {
    return {
      outcome: 'rejected',
      reason: 'unparseable_answer',
      detail: `no final answer could be read from solution${unreadable.length > 1 ? 's' : ''} ${unreadable.join(', ')}`,
    };
  }
  const answers = solutions.map((s) => s.answer!);
  const between: MathPair[] = [];
  for (let i = 0; i < answers.length; i++)
    for (let j = i + 1; j < answers.length; j++) between.push({ gold: answers[i]!, answer: answers[j]! });
  const withSource: MathPair[] =
    row.source_answer === null ? [] : answers.map((answer) => ({ gold: row.source_answer!, answer }));

  let equivalent: boolean[];
  if (row.kind === 'math') {
    const pairs = [...between, ...withSource];
    equivalent = (await verifyMath(deps.sandbox(), pairs)).map((verdict) => verdict.equivalent);
  } else {
    equivalent = [...between, ...withSource].map((pair) => exactMatch(pair.answer, pair.gold));
  }
  const listed = answers.map((a, i) => `${i}: ${JSON.stringify(a)}`).join('; ');
  if (!equivalent.slice(0, between.length).every(Boolean)) {
    return {
      outcome: 'rejected',
      reason: 'answers_disagree',
      detail: `the final answers differ (${listed})`,
    };
  }
  if (!equivalent.slice(between.length).every(Boolean)) {
    return {
      outcome: 'rejected',
      reason: 'source_mismatch',
      detail: `the solutions agree on ${JSON.stringify(answers[0])}, the seed's answer is ${JSON.stringify(row.source_answer)}`,
    };
  }
  return { outcome: 'kept', answer: answers[0]! };
}

async function readProblem(pool: pg.Pool, problemId: string): Promise<ProblemRow> {
  const { rows } = await pool.query<ProblemRow>(
    `SELECT problem_id, kind, source_question, source_answer, outcome, drop_reason
       FROM reasoning_problems WHERE problem_id = $1`,
    [problemId],
  );
  if (!rows[0])
    throw new SynthesisStageError(problemId, 'no such reasoning problem (its seeds were not loaded)');
  return rows[0];
}

/** The persona of problem `idx`: the run's personas in turn (problem i gets persona i mod count). */
async function personaFor(pool: pg.Pool, runId: string, idx: number, problemId: string) {
  const { rows } = await pool.query<{ persona_id: string; persona: string }>(
    `SELECT persona_id, persona FROM synthesis_personas
      WHERE run_id = $1
        AND idx = $2::int % GREATEST((SELECT count(*) FROM synthesis_personas WHERE run_id = $1), 1)`,
    [runId, idx],
  );
  if (!rows[0]) throw new SynthesisStageError(problemId, 'the run loaded no personas to rewrite it for');
  return { id: rows[0].persona_id, persona: rows[0].persona };
}

/** A problem whose activity failed for good: its row says so, with the error's type and message. */
export interface ReasoningProblemFailure {
  readonly runId: string;
  readonly idx: number;
  readonly reason: string;
  readonly detail: string;
}

/**
 * Marks a problem failed (the workflow calls it once the problem's activity has given up), so its
 * row, the report and the export do not show it as still pending. A decided row keeps its outcome.
 */
export async function recordReasoningProblemFailure(
  pool: pg.Pool,
  failure: ReasoningProblemFailure,
): Promise<void> {
  await pool.query(
    `UPDATE reasoning_problems
        SET outcome = 'failed', drop_reason = $2, drop_detail = $3, updated_at = now()
      WHERE problem_id = $1 AND outcome = 'pending'`,
    [problemIdOf(failure.runId, failure.idx), failure.reason, failure.detail.slice(0, 2_000)],
  );
}

/** Writes a problem's outcome once: a row already decided keeps what it has. */
async function decide(
  pool: pg.Pool,
  problemId: string,
  personaId: string,
  scenario: string | null,
  solutions: readonly ReasoningSolution[],
  decision: Decision,
): Promise<void> {
  await pool.query(
    `UPDATE reasoning_problems
        SET persona_id = $2, scenario = $3, solutions = $4, outcome = $5, answer = $6,
            drop_reason = $7, drop_detail = $8, updated_at = now()
      WHERE problem_id = $1 AND outcome IN ('pending', 'failed')`,
    [
      problemId,
      personaId,
      scenario,
      JSON.stringify(solutions),
      decision.outcome,
      decision.outcome === 'kept' ? decision.answer : null,
      decision.outcome === 'rejected' ? decision.reason : null,
      decision.outcome === 'rejected' ? decision.detail.slice(0, 2_000) : null,
    ],
  );
}

/** The text after a closed reasoning block (a thinking model's rewrite). */
function afterReasoning(text: string): string {
  const close = text.lastIndexOf('</think>');
  return close >= 0 ? text.slice(close + '</think>'.length) : text;
}
