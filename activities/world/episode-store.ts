import type pg from 'pg';
import type { ChatCompletionMessageParam } from '../llm/index.js';
import type { EndReason, EpisodeInput } from '../../schemas/episode-input.js';
import type { EpisodeProgress } from './episode-summary.js';
import { EpisodeCheckpointConflictError, EpisodeMismatchError } from './errors.js';

/** An episode's checkpoint: the transcript and its counters after the last finished turn. */
export interface EpisodeState extends EpisodeProgress {
  readonly messages: readonly ChatCompletionMessageParam[];
  /** Why it ended, where the end reason alone does not say (`episodes.end_detail`); bounded. */
  readonly endDetail?: string | null;
  /** Prompt tokens of the first agent call (the opening); null before it. */
  readonly openingTokens: number | null;
  /** The agent's response so far in the engine's tokens (response-length.ts). */
  readonly responseTokens: number;
  /** Set when a turn was served by another policy version than scheduled (served-version.ts). */
  readonly offPolicy: string | null;
}

interface Row {
  task_id: string;
  purpose: string;
  sample_index: number;
  policy_version: string;
  messages: ChatCompletionMessageParam[];
  turns: number;
  tool_calls: number;
  user_questions: number;
  tool_errors: number;
  end_reason: EndReason | null;
  end_detail: string | null;
  opening_tokens: number | null;
  response_tokens: number;
  off_policy: string | null;
}

/**
 * Creates the episode's row with the opening messages, or finds the one an earlier attempt wrote,
 * and returns its last checkpoint. The id is deterministic, so a row that belongs to another
 * task, purpose, sample or policy version is a caller bug: {@link EpisodeMismatchError}.
 */
export async function openEpisode(
  pool: pg.Pool,
  input: EpisodeInput,
  opening: readonly ChatCompletionMessageParam[],
): Promise<EpisodeState> {
  await pool.query(
    `INSERT INTO episodes (episode_id, task_id, purpose, sample_index, policy_version, messages)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb) ON CONFLICT (episode_id) DO NOTHING`,
    [
      input.episodeId,
      input.taskId,
      input.purpose,
      input.sampleIndex,
      input.policyVersion,
      JSON.stringify(opening),
    ],
  );
  const { rows } = await pool.query<Row>(
    `SELECT task_id, purpose, sample_index, policy_version, messages, turns, tool_calls, user_questions,
            tool_errors, end_reason, end_detail, opening_tokens, response_tokens, off_policy
       FROM episodes WHERE episode_id = $1`,
    [input.episodeId],
  );
  const row = rows[0]!;
  const expected: Array<[string, unknown, unknown]> = [
    ['task_id', row.task_id, input.taskId],
    ['purpose', row.purpose, input.purpose],
    ['sample_index', row.sample_index, input.sampleIndex],
    ['policy_version', row.policy_version, input.policyVersion],
  ];
  const differs = expected.find(([, stored, given]) => stored !== given);
  if (differs) {
    const [column, stored, given] = differs;
    throw new EpisodeMismatchError(
      input.episodeId,
      `${column}: stored ${String(stored)}, given ${String(given)}`,
    );
  }
  return {
    episodeId: input.episodeId,
    messages: row.messages,
    turns: row.turns,
    toolCalls: row.tool_calls,
    userQuestions: row.user_questions,
    toolErrors: row.tool_errors,
    endReason: row.end_reason,
    endDetail: row.end_detail,
    openingTokens: row.opening_tokens,
    responseTokens: row.response_tokens,
    offPolicy: row.off_policy,
  };
}

/**
 * Writes a checkpoint if the row still holds the one it continues (`previousTurns`, not ended):
 * an older attempt still running after a retry started cannot overwrite newer progress; it gets
 * {@link EpisodeCheckpointConflictError} instead.
 */
export async function checkpointEpisode(
  pool: pg.Pool,
  previousTurns: number,
  state: EpisodeState,
): Promise<void> {
  const { rowCount } = await pool.query(
    `UPDATE episodes
        SET messages = $3::jsonb, turns = $4, tool_calls = $5, user_questions = $6, tool_errors = $7,
            end_reason = $8, end_detail = $9, opening_tokens = $10, response_tokens = $11,
            off_policy = $12, updated_at = now()
      WHERE episode_id = $1 AND turns = $2 AND end_reason IS NULL`,
    [
      state.episodeId,
      previousTurns,
      JSON.stringify(state.messages),
      state.turns,
      state.toolCalls,
      state.userQuestions,
      state.toolErrors,
      state.endReason,
      state.endDetail ?? null,
      state.openingTokens,
      state.responseTokens,
      state.offPolicy,
    ],
  );
  if (rowCount !== 1) throw new EpisodeCheckpointConflictError(state.episodeId, previousTurns);
}
