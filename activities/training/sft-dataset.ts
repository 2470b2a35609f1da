import type pg from 'pg';
import { SftBatchRecordSchema } from '../../schemas/trainer-batch-record.js';
import { keptTasks } from '../export/kept-tasks.js';
import { sftRecords } from '../export/layouts.js';
import { TrainingPlanError } from './errors.js';
import { reasoningDemonstrations } from './sft-reasoning.js';
import { mixSeed, seededShuffle, splitHeldOut } from './sampling.js';

/** Stream label of the sample of `examples` (mixed into the seed so it never equals another stream's). */
const SAMPLE_STREAM = 0x53_46_54_53; // "SFTS"
/** Stream label of the per-epoch orders. */
const SFT_EPOCH_STREAM = 0x53_46_54_45; // "SFTE"
/** Rows per INSERT: a batch row holds a whole transcript. */
const ROWS_PER_INSERT = 500;

/** Input of {@link buildSftDataset}. */
export interface BuildSftDatasetInput {
  /** The SftTraining run (workflow id): its batches are written under it. */
  readonly runId: string;
  /** Synthesis run whose kept tasks' kept demonstrations are trained on. */
  readonly synthesisRunId: string;
  /** demonstrations: the tool-use tasks' (default); reasoning: the kept reasoning problems' solutions. */
  readonly source?: 'demonstrations' | 'reasoning';
  /** Kept tasks held out as GrpoTraining holds them out (same seed, same tasks). */
  readonly heldOutTasks: number;
  /** Demonstrations to train on (a seeded sample); undefined: all of the training tasks'. */
  readonly examples?: number;
  readonly epochs: number;
  /** Examples per optimizer step. */
  readonly globalBatch: number;
  readonly seed: number;
}

/** What an SFT run trains on. */
export interface SftDataset {
  /** Kept tasks of the synthesis run. */
  readonly keptTasks: number;
  /** Of them held out (their demonstrations never trained on). */
  readonly heldOutTasks: number;
  /** Kept demonstrations of the training tasks. */
  readonly demonstrations: number;
  /** Demonstrations trained on: `examples`, or every one. */
  readonly examples: number;
  /** Optimizer steps: epochs × ⌈examples / globalBatch⌉. */
  readonly steps: number;
}

/** The units the held-out split draws from (tasks or problems), each with its SFT records. */
async function sourceUnits(
  pool: pg.Pool,
  input: BuildSftDatasetInput,
): Promise<Array<{ readonly records: ReadonlyArray<{ readonly episode_id: string }> }>> {
  if (input.source === 'reasoning') return reasoningDemonstrations(pool, input.synthesisRunId);
  const units = [];
  for await (const task of keptTasks(pool, input.synthesisRunId)) units.push({ records: sftRecords(task) });
  return units;
}

/**
 * Builds an SFT run's data set from the kept demonstrations of a synthesis run and writes its
 * trainer batches (one per optimizer step, in a seeded order per epoch) to `trainer_batches` under
 * the run; the Python trainer reads them by reference. Each demonstration is converted as the
 * `sft` export converts it (activities/export/layouts.ts sftRecords): the transcript with the tools
 * it could call. Tasks are held out exactly as GrpoTraining holds them out. With `source:
 * reasoning` the units are the kept reasoning problems and their records the correct solutions
 * (sft-reasoning.ts).
 *
 * Throws {@link TrainingPlanError} (not retryable), naming the spec field to change, when more
 * tasks are held out than kept, when no demonstration is left, or when `examples` asks for more
 * than are kept. Idempotent and insert-only: a re-build writes the same rows, and a batch the
 * trainer may already have stepped on is never altered.
 */
export async function buildSftDataset(pool: pg.Pool, input: BuildSftDatasetInput): Promise<SftDataset> {
  const tasks = await sourceUnits(pool, input);
  const unit = input.source === 'reasoning' ? 'problems' : 'tasks';
  if (input.heldOutTasks > tasks.length) {
    throw new TrainingPlanError(
      input.synthesisRunId,
      `dataset.heldOutTasks (${input.heldOutTasks}) exceeds its ${tasks.length} kept ${unit}; lower dataset.heldOutTasks`,
    );
  }
  const { train } = splitHeldOut(tasks, input.heldOutTasks, input.seed);
  const available = train.flatMap((task) => task.records);
  const counts =
    `its ${train.length} training ${unit} (${tasks.length} kept, ${input.heldOutTasks} held out) have ` +
    `${available.length} kept demonstrations`;
  if (available.length === 0) {
    throw new TrainingPlanError(
      input.synthesisRunId,
      `${counts}; nothing to train on: lower dataset.heldOutTasks, or synthesize more ${unit}`,
    );
  }
  const wanted = input.examples ?? available.length;
  if (wanted > available.length) {
    throw new TrainingPlanError(
      input.synthesisRunId,
      `dataset.examples (${wanted}) exceeds the ${available.length} kept demonstrations: ${counts}; ` +
        `lower dataset.examples (or dataset.heldOutTasks), or synthesize more ${unit}`,
    );
  }
  // A seeded sample when capped; the whole set in task order otherwise.
  const chosen =
    wanted === available.length
      ? available
      : seededShuffle(available, mixSeed(input.seed, SAMPLE_STREAM)).slice(0, wanted);
  const malformed = chosen.flatMap((record) =>
    SftBatchRecordSchema.safeParse(record).success ? [] : [record.episode_id],
  );
  if (malformed.length) {
    throw new TrainingPlanError(
      input.synthesisRunId,
      `demonstrations ${malformed.slice(0, 5).join(', ')} are not trainable chats (no assistant turn)`,
    );
  }

  const perEpoch = Math.ceil(chosen.length / input.globalBatch);
  for (let epoch = 0; epoch < input.epochs; epoch++) {
    const order = seededShuffle(chosen, mixSeed(input.seed, SFT_EPOCH_STREAM, epoch));
    for (let from = 0; from < order.length; from += ROWS_PER_INSERT) {
      const rows = order.slice(from, from + ROWS_PER_INSERT);
      await pool.query(
        `INSERT INTO trainer_batches (run_id, step, episode_id, payload)
         SELECT $1, t.step, t.episode_id, t.payload
           FROM unnest($2::int[], $3::text[], $4::jsonb[]) AS t(step, episode_id, payload)
         ON CONFLICT (run_id, step, episode_id) DO NOTHING`,
        [
          input.runId,
          rows.map((_, i) => epoch * perEpoch + Math.floor((from + i) / input.globalBatch) + 1),
          rows.map((record) => record.episode_id),
          rows.map((record) => JSON.stringify(record)),
        ],
      );
    }
  }
  return {
    keptTasks: tasks.length,
    heldOutTasks: input.heldOutTasks,
    demonstrations: available.length,
    examples: chosen.length,
    steps: perEpoch * input.epochs,
  };
}
