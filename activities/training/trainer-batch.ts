import type pg from 'pg';
import { z } from 'zod';
import { FunctionToolsSchema } from '../../schemas/function-tool.js';
import { GrpoBatchRecordSchema } from '../../schemas/trainer-batch-record.js';
import { PostgresBatchRefSchema, TRAINER_BATCHES_TABLE } from '../../schemas/trainer-step.js';
import { groupAdvantages } from '../reward/index.js';
import { inTransaction } from '../store/db.js';
import { ASK_USER_TOOL } from '../world/index.js';
import type { ReasoningKind } from '../../schemas/reasoning-correctness.js';
import { TrainerBatchError } from './errors.js';
import { reasoningTools } from './reasoning-rollout.js';

/** Table the Python trainer reads `postgres` batch references from (the trainer contract's default). */
export { TRAINER_BATCHES_TABLE };
/** Rows per INSERT statement (keeps one statement's JSON parameter bounded). */
const INSERT_CHUNK = 128;

/** One scored rollout of a batch. */
export interface TrainerBatchItem {
  readonly episodeId: string;
  /** The episode's task: its GRPO group. */
  readonly taskId: string;
  /** R(τ) from the judge; must be finite (unscored rollouts are left out, never defaulted). */
  readonly reward: number;
}

/** Input of {@link buildTrainerBatch}. */
export interface BuildTrainerBatchInput {
  /** The training run (workflow id); the trainer's `run_id`. */
  readonly runId: string;
  /** The trainer step this batch feeds (>= 1). */
  readonly step: number;
  readonly items: readonly TrainerBatchItem[];
}

/** The `batch_ref` of `trainer.grpoStep` that names a written batch, every field of the contract's set. */
export type PostgresBatchRef = Readonly<Required<z.input<typeof PostgresBatchRefSchema>>>;

/** What was written, with the batch's reward statistics. */
export interface TrainerBatchSummary {
  /** Rows of the batch (one per rollout). */
  readonly rows: number;
  /** Distinct tasks (GRPO groups). */
  readonly groups: number;
  /** Groups whose rewards are all equal (no gradient; seed §3.1). */
  readonly zeroVarianceGroups: number;
  readonly rewardMean: number;
  /** Population standard deviation over all rollouts (the trainer's `reward_std`). */
  readonly rewardStd: number;
  /** Pass as `batch_ref` to `trainer.grpoStep`. */
  readonly batchRef: PostgresBatchRef;
}

interface EpisodeRow {
  episode_id: string;
  task_id: string;
  messages: Array<{ role?: unknown }>;
  end_reason: string | null;
  tools: unknown;
  /** Set when the episode's task is a reasoning problem. */
  problem_kind: ReasoningKind | null;
}

/**
 * Writes one GRPO record per rollout into `trainer_batches` for (run, step): `{group_id: taskId,
 * reward, messages, tools}`, where `messages` is the episode's transcript as the agent saw it
 * (system prompt and instruction first) and `tools` the task's tools plus `ask_user`, as offered.
 * Idempotent: after it returns, the step's rows are exactly the items' (keyed by episode id), so a
 * retry never duplicates or leaves stale rows. Throws {@link TrainerBatchError} naming every bad item.
 */
export async function buildTrainerBatch(
  pool: pg.Pool,
  input: BuildTrainerBatchInput,
): Promise<TrainerBatchSummary> {
  const { runId, step, items } = input;
  const problems = inputProblems(step, items);
  if (problems.length > 0) throw new TrainerBatchError(runId, step, problems);
  const records = await batchRecords(pool, items, problems);
  if (problems.length > 0) throw new TrainerBatchError(runId, step, problems);
  await writeBatch(pool, runId, step, items, records);

  const rewards = items.map((i) => i.reward);
  const { numGroups, zeroVarianceGroups } = groupAdvantages(
    rewards,
    items.map((i) => i.taskId),
  );
  const rewardMean = rewards.reduce((s, r) => s + r, 0) / rewards.length;
  const rewardStd = Math.sqrt(rewards.reduce((s, r) => s + (r - rewardMean) ** 2, 0) / rewards.length);
  return {
    rows: records.length,
    groups: numGroups,
    zeroVarianceGroups,
    rewardMean,
    rewardStd,
    batchRef: { kind: 'postgres', table: TRAINER_BATCHES_TABLE, run_id: runId, step },
  };
}

/** One GRPO record of the batch, keyed by the episode it was built from. */
interface BatchRecord {
  episodeId: string;
  payload: z.output<typeof GrpoBatchRecordSchema>;
}

/** What is wrong with the input before any row is read: the step, an empty batch, repeats, rewards. */
function inputProblems(step: number, items: BuildTrainerBatchInput['items']): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(step) || step < 1) problems.push(`step must be an integer >= 1, got ${step}`);
  if (items.length === 0) problems.push('no items: a batch needs at least one scored rollout');
  const seen = new Set<string>();
  for (const item of items) {
    if (seen.has(item.episodeId)) problems.push(`${item.episodeId}: listed twice`);
    seen.add(item.episodeId);
    if (typeof item.reward !== 'number' || !Number.isFinite(item.reward)) {
      problems.push(`${item.episodeId}: reward ${String(item.reward)} is not a finite number`);
    }
  }
  return problems;
}

/** Each item's record from its episode row; what is wrong with an item is added to `problems`. */
async function batchRecords(
  pool: pg.Pool,
  items: BuildTrainerBatchInput['items'],
  problems: string[],
): Promise<BatchRecord[]> {
  const { rows } = await pool.query<EpisodeRow>(
    `SELECT e.episode_id, e.task_id, e.messages, e.end_reason, t.tools, p.kind AS problem_kind
       FROM episodes e LEFT JOIN tasks t ON t.task_id = e.task_id
                       LEFT JOIN reasoning_problems p ON p.problem_id = e.task_id
      WHERE e.episode_id = ANY($1::text[])`,
    [items.map((i) => i.episodeId)],
  );
  const byId = new Map(rows.map((r) => [r.episode_id, r]));
  const records: BatchRecord[] = [];
  for (const item of items) {
    const row = byId.get(item.episodeId);
    if (!row) {
      problems.push(`${item.episodeId}: no such episode`);
      continue;
    }
    if (row.task_id !== item.taskId)
      problems.push(`${item.episodeId}: belongs to task ${row.task_id}, not ${item.taskId}`);
    if (row.end_reason === null) problems.push(`${item.episodeId}: has not ended`);
    // A reasoning problem's rollout was offered the tools of its kind; a task's, its own and ask_user.
    const tools = row.problem_kind
      ? { success: true as const, data: reasoningTools(row.problem_kind) }
      : FunctionToolsSchema.safeParse(row.tools);
    if (!tools.success) {
      problems.push(`${item.episodeId}: task ${row.task_id} has no valid tools`);
      continue;
    }
    const payload = {
      group_id: item.taskId,
      reward: item.reward,
      messages: row.messages,
      tools: row.problem_kind ? tools.data : [...tools.data, ASK_USER_TOOL],
    };
    // The record the trainer validates (schemas/trainer-batch-record.ts): refused here, named, rather
    // than by the trainer after the whole iteration's rollouts.
    const record = GrpoBatchRecordSchema.safeParse(payload);
    if (record.success) records.push({ episodeId: item.episodeId, payload: record.data });
    else {
      for (const issue of record.error.issues) {
        problems.push(`${item.episodeId}: ${issue.path.join('.') || 'record'}: ${issue.message}`);
      }
    }
  }
  return records;
}

/** Makes the step's rows exactly `records`, in one transaction (stale rows of a retry deleted). */
async function writeBatch(
  pool: pg.Pool,
  runId: string,
  step: number,
  items: BuildTrainerBatchInput['items'],
  records: readonly BatchRecord[],
): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query(
      `DELETE FROM trainer_batches WHERE run_id = $1 AND step = $2 AND NOT (episode_id = ANY($3::text[]))`,
      [runId, step, items.map((i) => i.episodeId)],
    );
    for (let i = 0; i < records.length; i += INSERT_CHUNK) {
      await client.query(
        `INSERT INTO trainer_batches (run_id, step, episode_id, payload)
         SELECT $1, $2, r ->> 'episodeId', r -> 'payload' FROM jsonb_array_elements($3::jsonb) AS r
         ON CONFLICT (run_id, step, episode_id) DO UPDATE SET payload = EXCLUDED.payload
          WHERE trainer_batches.payload IS DISTINCT FROM EXCLUDED.payload`,
        [runId, step, JSON.stringify(records.slice(i, i + INSERT_CHUNK))],
      );
    }
  });
}
