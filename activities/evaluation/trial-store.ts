/**
 * The CPU worker's side of `eval_trials` (the Python evaluation worker writes the same rows for
 * tau2 and BFCL): a trial's row found by its key, written once (first write wins), and answered as
 * the workflow's trial summary. A trial stored with other settings or versions is a conflict, not a
 * result: its config hash says so.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { REPO_ROOT } from '../../deploy/paths.js';
import type { EvaluationBenchmark, TrialSummary } from '../../schemas/evaluation-contract.js';
import { canonicalJson } from '../llm/index.js';
import { type BenchmarkFileError, EvalTrialConflict } from './errors.js';

/** A trial's key: evaluation, benchmark, group, task, trial. */
export type TrialKey = readonly [string, EvaluationBenchmark, string, string, number];

/** The versions that decide a score on the CPU worker: this package and the math verifier. */
export function packageVersions(): Record<string, string> {
  const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), 'utf8');
  const mockworld = (JSON.parse(read('package.json')) as { version: string }).version;
  const mathVerify = /^math-verify==(\S+)/m.exec(read('deploy/sandbox-requirements.txt'))?.[1] ?? 'unknown';
  return { mockworld, 'math-verify': mathVerify };
}

/** sha256 of a trial's settings, versions and data: rows compare only when it is equal. */
export function configHash(config: unknown, packages: unknown, data: unknown): string {
  return createHash('sha256').update(canonicalJson({ config, packages, data })).digest('hex');
}

interface TrialRow {
  evaluation_id: string;
  benchmark: EvaluationBenchmark;
  task_group: string;
  task_id: string;
  trial: number;
  reward: number;
  termination: string;
  steps: number;
  prompt_tokens: number;
  completion_tokens: number;
  failure: string | null;
  config_hash: string;
}

function summary(row: TrialRow, stored: boolean): TrialSummary {
  return {
    evaluationId: row.evaluation_id,
    benchmark: row.benchmark,
    group: row.task_group,
    taskId: row.task_id,
    trial: row.trial,
    reward: row.reward,
    termination: row.termination,
    steps: row.steps,
    promptTokens: row.prompt_tokens,
    completionTokens: row.completion_tokens,
    failure: row.failure,
    stored,
  };
}

async function findTrial(pool: pg.Pool, key: TrialKey): Promise<TrialRow | undefined> {
  const { rows } = await pool.query<TrialRow>(
    `SELECT evaluation_id, benchmark, task_group, task_id, trial, reward, termination, steps, prompt_tokens,
            completion_tokens, failure, config_hash
       FROM eval_trials
      WHERE evaluation_id = $1 AND benchmark = $2 AND task_group = $3 AND task_id = $4 AND trial = $5`,
    [...key],
  );
  return rows[0];
}

/**
 * The stored trial's summary, if there is one; a trial stored under another config hash fails,
 * not retryable (start a new evaluation id).
 */
export async function storedTrial(
  pool: pg.Pool,
  key: TrialKey,
  hash: string,
): Promise<TrialSummary | undefined> {
  const found = await findTrial(pool, key);
  if (!found) return undefined;
  if (found.config_hash !== hash) {
    throw new EvalTrialConflict(key.join('/'), found.config_hash, hash);
  }
  return summary(found, true);
}

/** What a trial that ran stores. */
export interface TrialOutcome {
  readonly reward: number;
  readonly termination: string;
  readonly steps: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly failure: string | null;
  readonly detail: string;
  readonly trajectory: unknown;
}

/** Stores a trial that ran (insert-if-absent) and returns the row that holds, as a summary. */
export async function storeTrial(
  pool: pg.Pool,
  key: TrialKey,
  outcome: TrialOutcome,
  versions: { packages: unknown; data: unknown; config: unknown; hash: string },
  started: { wall: number; cpu: NodeJS.CpuUsage },
): Promise<TrialSummary> {
  const cpu = process.cpuUsage(started.cpu);
  await pool.query(
    `INSERT INTO eval_trials (evaluation_id, benchmark, task_group, task_id, trial, reward, termination, steps,
                              prompt_tokens, completion_tokens, failure, detail, trajectory, package_versions,
                              data_version, config, config_hash, wall_seconds, cpu_seconds)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
     ON CONFLICT DO NOTHING`,
    [
      ...key,
      outcome.reward,
      outcome.termination,
      outcome.steps,
      outcome.promptTokens,
      outcome.completionTokens,
      outcome.failure,
      outcome.detail.slice(0, 2_000),
      JSON.stringify(outcome.trajectory),
      JSON.stringify(versions.packages),
      JSON.stringify(versions.data),
      JSON.stringify(versions.config),
      versions.hash,
      (Date.now() - started.wall) / 1000,
      (cpu.user + cpu.system) / 1e6,
    ],
  );
  return summary((await findTrial(pool, key))!, false);
}

/**
 * A group's task ids as a spec picks them: `taskIds` (each must be among `ids`, else the
 * BenchmarkFileError `missing` makes, not retryable), then the first `limit`.
 */
export function selectTasks(
  ids: readonly string[],
  pick: { readonly taskIds?: readonly string[]; readonly limit?: number },
  missing: (ids: readonly string[]) => BenchmarkFileError,
): string[] {
  let chosen = [...ids];
  if (pick.taskIds) {
    const absent = pick.taskIds.filter((id) => !ids.includes(id));
    if (absent.length > 0) {
      throw missing(absent);
    }
    chosen = chosen.filter((id) => pick.taskIds!.includes(id));
  }
  return pick.limit === undefined ? chosen : chosen.slice(0, pick.limit);
}
