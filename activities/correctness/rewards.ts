import { createHash } from 'node:crypto';
import type pg from 'pg';
import {
  CorrectnessInputSchema,
  type CorrectnessInput,
  type CorrectnessInputData,
  type CorrectnessReward,
} from '../../schemas/reasoning-correctness.js';
import type { ModelClient } from '../llm/index.js';
import type { RunDependencies } from '../sandbox/index.js';
import { CorrectnessInputError } from './errors.js';
import { extractFinalAnswer, type ExtractedAnswer } from './extract.js';
import { verifyMath } from './math-verify.js';
import { ensureAnswerControls } from './answer-controls.js';
import { exactMatch, judgeAnswer } from './search-match.js';

/** What scoring needs from the worker. */
export interface CorrectnessDependencies {
  readonly pool: pg.Pool;
  readonly models: ModelClient;
  /** The sandbox the math verifier runs in. */
  readonly sandbox: () => RunDependencies;
  readonly signal?: AbortSignal;
}

interface Scored extends CorrectnessReward {
  readonly judgeCacheKey: string | null;
}

interface StoredRow {
  reward_id: string;
  run_id: string;
  kind: string;
  gold: string;
  response_sha256: string;
  extracted_answer: string | null;
  reward: number;
  method: CorrectnessReward['method'];
  detail: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Correctness rewards (1/0) for responses to one reasoning problem, each stored with the answer
 * extracted from it (`correctness_rewards`). Math: the final answer (`\boxed{}` or a final-answer
 * line) against the gold answer by math-verify in the sandbox, never by string equality. Search:
 * exact match after normalization against the gold answer and its aliases, else the LLM judge
 * (seed §4.1). No extractable answer: 0. Rewards are stored insert-if-absent under their ids, so a
 * retried activity returns what was stored and judges nothing again; an id stored for another
 * response or problem is refused ({@link CorrectnessInputError}).
 */
export async function scoreAnswers(
  deps: CorrectnessDependencies,
  data: CorrectnessInput,
): Promise<CorrectnessReward[]> {
  const input = CorrectnessInputSchema.parse(data);
  if (input.kind === 'search' && !input.judge)
    throw new CorrectnessInputError('a search problem needs a judge');
  const ids = input.items.map((item) => item.rewardId);
  if (new Set(ids).size !== ids.length) throw new CorrectnessInputError('two items share a reward id');

  const stored = await storedRewards(deps.pool, input);
  const missing = input.items.filter((item) => !stored.has(item.rewardId));
  if (missing.length > 0) {
    const scored =
      input.kind === 'math' ? await scoreMath(deps, input, missing) : await scoreSearch(deps, input, missing);
    await insertRewards(deps.pool, input, scored);
    for (const reward of await storedRewards(deps.pool, input)) stored.set(reward[0], reward[1]);
  }
  return input.items.map((item) => stored.get(item.rewardId)!);
}

type Item = CorrectnessInputData['items'][number];

function noAnswer(rewardId: string, kind: string): Scored {
  const wanted = kind === 'math' ? 'no \\boxed{} answer and no final-answer line' : 'an empty response';
  return {
    rewardId,
    reward: 0,
    extractedAnswer: null,
    method: 'no-answer',
    detail: wanted,
    judgeCacheKey: null,
  };
}

async function scoreMath(
  deps: CorrectnessDependencies,
  input: CorrectnessInputData,
  items: readonly Item[],
): Promise<Scored[]> {
  const extracted = items.map((item) => extractFinalAnswer(item.response));
  const answered = items.flatMap((item, i) => (extracted[i] ? [{ item, answer: extracted[i]! }] : []));
  const verdicts = answered.length
    ? await verifyMath(
        deps.sandbox(),
        answered.map(({ answer }) => ({ gold: input.gold, answer: answer.answer })),
      )
    : [];
  const byId = new Map(
    answered.map(({ item, answer }, i): [string, Scored] => {
      const verdict = verdicts[i]!;
      const parsed = `math-verify read the gold answer as ${verdict.gold ?? '(nothing)'} and the answer (${answer.from}) as ${verdict.answer ?? '(nothing)'}`;
      return [
        item.rewardId,
        {
          rewardId: item.rewardId,
          reward: verdict.equivalent ? 1 : 0,
          extractedAnswer: answer.answer,
          method: 'math-verify',
          detail: verdict.error ? `${parsed}; ${verdict.error}` : parsed,
          judgeCacheKey: null,
        },
      ];
    }),
  );
  return items.map((item) => byId.get(item.rewardId) ?? noAnswer(item.rewardId, 'math'));
}

async function scoreSearch(
  deps: CorrectnessDependencies,
  input: CorrectnessInputData,
  items: readonly Item[],
): Promise<Scored[]> {
  const scored: Scored[] = [];
  let controlled = false;
  for (const item of items) {
    const answer: ExtractedAnswer | null = extractFinalAnswer(item.response, { lastLine: true });
    if (!answer) {
      scored.push(noAnswer(item.rewardId, 'search'));
      continue;
    }
    if (exactMatch(answer.answer, input.gold, input.aliases)) {
      scored.push({
        rewardId: item.rewardId,
        reward: 1,
        extractedAnswer: answer.answer,
        method: 'exact-match',
        detail: `the answer (${answer.from}) equals the gold answer once normalized`,
        judgeCacheKey: null,
      });
      continue;
    }
    // The judge's controls on this question, once per run, before its first verdict on it.
    if (!controlled) {
      await ensureAnswerControls(deps, {
        runId: input.runId,
        question: input.question,
        gold: input.gold,
        judge: input.judge!,
      });
      controlled = true;
    }
    const verdict = await judgeAnswer({
      models: deps.models,
      judge: input.judge!,
      runId: input.runId,
      question: input.question,
      gold: input.gold,
      answer: answer.answer,
      signal: deps.signal,
    });
    scored.push({
      rewardId: item.rewardId,
      reward: verdict.equivalent ? 1 : 0,
      extractedAnswer: answer.answer,
      method: 'judge',
      detail: `the answer (${answer.from}), judged ${verdict.equivalent ? 'equivalent' : 'not equivalent'}: ${verdict.reason}`,
      judgeCacheKey: verdict.cacheKey,
    });
  }
  return scored;
}

/** Stored rewards of these items; an id stored for another response or problem is refused. */
async function storedRewards(
  pool: pg.Pool,
  input: CorrectnessInputData,
): Promise<Map<string, CorrectnessReward>> {
  const items = new Map(input.items.map((item) => [item.rewardId, item]));
  const { rows } = await pool.query<StoredRow>(
    `SELECT reward_id, run_id, kind, gold, response_sha256, extracted_answer, reward, method, detail
       FROM correctness_rewards WHERE reward_id = ANY($1::text[])`,
    [[...items.keys()]],
  );
  const found = new Map<string, CorrectnessReward>();
  for (const row of rows) {
    const item = items.get(row.reward_id)!;
    if (
      row.response_sha256 !== sha256(item.response) ||
      row.gold !== input.gold ||
      row.kind !== input.kind ||
      row.run_id !== input.runId
    ) {
      throw new CorrectnessInputError(
        `reward ${row.reward_id} is already stored for another response or problem`,
      );
    }
    found.set(row.reward_id, {
      rewardId: row.reward_id,
      reward: row.reward === 1 ? 1 : 0,
      extractedAnswer: row.extracted_answer,
      method: row.method,
      detail: row.detail,
    });
  }
  return found;
}

async function insertRewards(
  pool: pg.Pool,
  input: CorrectnessInputData,
  scored: readonly Scored[],
): Promise<void> {
  const responses = new Map(input.items.map((item) => [item.rewardId, item.response]));
  await pool.query(
    `INSERT INTO correctness_rewards
       (reward_id, run_id, kind, gold, response_sha256, extracted_answer, reward, method, detail, judge_cache_key)
     SELECT r.id, $1, $2, $3, r.sha, r.answer, r.reward, r.method, r.detail, r.judge
       FROM unnest($4::text[], $5::text[], $6::text[], $7::smallint[], $8::text[], $9::text[], $10::text[])
            AS r(id, sha, answer, reward, method, detail, judge)
     ON CONFLICT (reward_id) DO NOTHING`,
    [
      input.runId,
      input.kind,
      input.gold,
      scored.map((s) => s.rewardId),
      scored.map((s) => sha256(responses.get(s.rewardId)!)),
      scored.map((s) => s.extractedAnswer),
      scored.map((s) => s.reward),
      scored.map((s) => s.method),
      scored.map((s) => s.detail),
      scored.map((s) => s.judgeCacheKey),
    ],
  );
}
