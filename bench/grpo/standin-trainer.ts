/**
 * A STAND-IN for the GPU trainer step, registered by the GRPO benchmarks on a run's GPU task
 * queue, in the bench process: a TypeScript implementation of the `trainer.grpoStep`,
 * `trainer.saveCheckpoint`, `trainer.registerRun` and `trainer.trackIteration` activity names.
 * It reads the step's batch from `trainer_batches` by its reference, checks it and records the
 * step (record.json per step in a checkpoint dir, step n only after n-1, a repeated step
 * replayed), but computes no gradient: the benchmarks measure the orchestration, not the trainer.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { ApplicationFailure, Context } from '@temporalio/activity';

interface StepInput {
  readonly run_id: string;
  readonly step: number;
  readonly batch_ref: { kind: string; table?: string; run_id?: string; step?: number };
  readonly model?: Record<string, unknown>;
  readonly config?: Record<string, number>;
}

/** `trainer.grpoStep` / `trainer.saveCheckpoint` for the bench: reads the batch, records the step, no gradient. */
export function standInTrainerActivities(databaseUrl: string, checkpointDir: string) {
  const stepDir = (run: string, step: number) =>
    path.join(checkpointDir, encodeURIComponent(run), `step-${String(step).padStart(8, '0')}`);
  const latestStep = async (run: string) => {
    for (let step = 0; ; step++)
      if (!existsSync(path.join(stepDir(run, step + 1), 'record.json'))) return step;
  };
  return {
    async 'trainer.grpoStep'(input: StepInput) {
      const { run_id: runId, step } = input;
      if (input.batch_ref?.kind !== 'postgres')
        throw ApplicationFailure.nonRetryable('stand-in reads postgres batches only', 'TrainerBadRequest');
      const dir = stepDir(runId, step);
      const recordFile = path.join(dir, 'record.json');
      if (existsSync(recordFile)) {
        const record = JSON.parse(await readFile(recordFile, 'utf8'));
        return { ...record, model_path: path.join(dir, 'model'), replayed: true };
      }
      const latest = await latestStep(runId);
      if (step !== latest + 1)
        throw ApplicationFailure.nonRetryable(`apply step ${latest + 1} first`, 'TrainerStepOutOfOrder');
      Context.current().heartbeat({ phase: 'start', done: 0, total: 1 });
      const started = performance.now();
      const sql = new pg.Client({ connectionString: databaseUrl });
      await sql.connect();
      let stats: Record<string, number | null>;
      try {
        // Read the whole batch as the trainer does (every record's transcript), then summarize.
        const { rows } = await sql.query<{
          payload: { group_id: string; reward: number; messages: unknown[] };
        }>(`SELECT payload FROM trainer_batches WHERE run_id = $1 AND step = $2`, [
          input.batch_ref.run_id ?? runId,
          input.batch_ref.step ?? step,
        ]);
        if (rows.length === 0)
          throw ApplicationFailure.nonRetryable(
            `no batch rows for ${runId} step ${step}`,
            'TrainerBadRequest',
          );
        const rewards = rows.map((r) => r.payload.reward);
        const mean = rewards.reduce((s, r) => s + r, 0) / rewards.length;
        stats = {
          num_samples: rows.length,
          num_groups: new Set(rows.map((r) => r.payload.group_id)).size,
          reward_mean: mean,
          reward_std: Math.sqrt(rewards.reduce((s, r) => s + (r - mean) ** 2, 0) / rewards.length),
          num_messages: rows.reduce((s, r) => s + r.payload.messages.length, 0),
          loss: null,
          duration_s: 0,
        };
      } finally {
        await sql.end();
      }
      stats.duration_s = Math.round(performance.now() - started) / 1000;
      const record = {
        run_id: runId,
        step,
        kind: 'grpo',
        stand_in: 'bench/grpo/standin-trainer.ts: batch read and step recorded, no gradient computed',
        batch_ref: input.batch_ref,
        config: input.config ?? {},
        model: input.model ?? {},
        metrics: stats,
        applied_at: new Date().toISOString(),
      };
      const tmp = `${dir}.tmp-${randomBytes(4).toString('hex')}`;
      await mkdir(tmp, { recursive: true });
      await writeFile(path.join(tmp, 'record.json'), JSON.stringify(record, null, 2));
      await rename(tmp, dir).catch(() => rm(tmp, { recursive: true, force: true })); // lost a race: theirs stands
      return { ...record, model_path: path.join(dir, 'model'), replayed: false };
    },
    async 'trainer.saveCheckpoint'(input: { run_id: string; step?: number }) {
      const step = input.step ?? (await latestStep(input.run_id));
      const dir = stepDir(input.run_id, step);
      if (!existsSync(path.join(dir, 'record.json')))
        throw ApplicationFailure.nonRetryable(`step ${step} not applied`, 'TrainerBadRequest');
      await writeFile(path.join(dir, 'pinned'), '');
      return { run_id: input.run_id, step, model_path: path.join(dir, 'model'), pinned: true };
    },
    /** The stand-in keeps no weights, so there is no model to record: the step it reports is all. */
    async 'trainer.registerRun'(input: { run_id: string }) {
      return { run_id: input.run_id, step: await latestStep(input.run_id) };
    },
    /** No experiment tracker in the bench: the call is answered, nothing is written. */
    async 'trainer.trackIteration'(input: { run_id: string; step: number }) {
      return { run_id: input.run_id, step: input.step, written: false };
    },
  };
}
