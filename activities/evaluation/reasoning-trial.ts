/**
 * Math and search benchmark trials of an Evaluation run, on the CPU worker (issue 15; seed 000
 * Table 3): one (problem, trial) is one episode of the policy with the real `python` tool (and
 * `search`), scored by correctness as the seed does, stored in `eval_trials` like a tau2 or BFCL
 * trial. Exactly once: a stored trial is returned as it is, never run again; a retried attempt
 * resumes the episode from its last turn and pays nothing twice (the model ledger).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type pg from 'pg';
import { REPO_ROOT } from '../../deploy/paths.js';
import { EpisodeInputSchema } from '../../schemas/episode-input.js';
import type { ListTasksResult, TrialSummary } from '../../schemas/evaluation-contract.js';
import {
  ReasoningListInputSchema,
  ReasoningTrialInputSchema,
  type ReasoningListInput,
  type ReasoningTrialInput,
} from '../../schemas/reasoning-evaluation.js';
import { canonicalJson, ModelRequestRejectedError } from '../llm/index.js';
import {
  playReasoningEpisode,
  scoreReasoningEpisode,
  type ReasoningRolloutDependencies,
} from '../training/reasoning-rollout.js';
import { POLICY_ROLE } from '../training/rollout.js';
import type { EpisodeHooks } from '../world/index.js';
import { BENCHMARK_FILE_ERROR, readBenchmarkFile, type BenchmarkFile } from './benchmark-file.js';

/** Failure type of a trial stored with other settings (the Python worker's, for the same case). */
const TRIAL_CONFLICT = 'EvalTrialConflict';

/** The pinned versions that decide a score here: this package and the math verifier. */
function packageVersions(): Record<string, string> {
  const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), 'utf8');
  const mockworld = (JSON.parse(read('package.json')) as { version: string }).version;
  const mathVerify = /^math-verify==(\S+)/m.exec(read('deploy/sandbox-requirements.txt'))?.[1] ?? 'unknown';
  return { mockworld, 'math-verify': mathVerify };
}

const dataVersion = (file: BenchmarkFile) => ({ [path.basename(file.path)]: file.sha256 });

/** The problems of a math or search group, in file order (`taskIds` picks some, `limit` the first). */
export async function listReasoningBenchmarkTasks(data: ReasoningListInput): Promise<ListTasksResult> {
  const input = ReasoningListInputSchema.parse(data);
  const file = await readBenchmarkFile(input.path);
  let ids = file.problems.map((problem) => problem.id);
  if (input.taskIds) {
    const missing = input.taskIds.filter((id) => !ids.includes(id));
    if (missing.length > 0) {
      throw ApplicationFailure.create({
        type: BENCHMARK_FILE_ERROR,
        nonRetryable: true,
        message: `${input.benchmark} ${input.group} has no problem ${missing
          .slice(0, 10)
          .map((id) => JSON.stringify(id))
          .join(', ')}`,
      });
    }
    ids = ids.filter((id) => input.taskIds!.includes(id));
  }
  if (input.limit !== undefined) ids = ids.slice(0, input.limit);
  return { taskIds: ids, packages: packageVersions(), data: dataVersion(file) };
}

interface TrialRow {
  evaluation_id: string;
  benchmark: TrialSummary['benchmark'];
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

async function storedTrial(pool: pg.Pool, key: unknown[]): Promise<TrialRow | undefined> {
  const { rows } = await pool.query<TrialRow>(
    `SELECT evaluation_id, benchmark, task_group, task_id, trial, reward, termination, steps, prompt_tokens,
            completion_tokens, failure, config_hash
       FROM eval_trials
      WHERE evaluation_id = $1 AND benchmark = $2 AND task_group = $3 AND task_id = $4 AND trial = $5`,
    key,
  );
  return rows[0];
}

/**
 * Runs one (problem, trial) exactly once and stores it: the reward (1/0), how the episode ended,
 * its turns and tokens, the whole transcript, the versions and the settings' hash. A model that
 * refuses the request (a 4xx: too long a context, say) is this trial's failure, recorded with its
 * reason and reward 0, as the evaluation worker records one; an unreachable model is retried.
 */
export async function runReasoningBenchmarkTrial(
  deps: ReasoningRolloutDependencies,
  data: ReasoningTrialInput,
  hooks: EpisodeHooks = {},
): Promise<TrialSummary> {
  const input = ReasoningTrialInputSchema.parse(data);
  const started = { wall: Date.now(), cpu: process.cpuUsage() };
  const file = await readBenchmarkFile(input.path);
  const { apiKeyEnv: _key, ...policy } = input.policy;
  const config = {
    policy,
    sampling: input.sampling,
    maxTurns: input.maxTurns,
    sandbox: input.sandbox ?? null,
    search: input.search ?? null,
    judge: input.judge
      ? { model: input.judge.endpoint?.model ?? null, sampling: input.judge.sampling }
      : null,
  };
  const packages = packageVersions();
  const data_version = dataVersion(file);
  const configHash = createHash('sha256')
    .update(canonicalJson({ config, packages, data: data_version }))
    .digest('hex');
  const key = [input.evaluationId, input.benchmark, input.group, input.taskId, input.trial];
  const found = await storedTrial(deps.pool, key);
  if (found) {
    if (found.config_hash !== configHash) {
      throw ApplicationFailure.create({
        type: TRIAL_CONFLICT,
        nonRetryable: true,
        message:
          `trial ${key.join('/')} is already stored with other settings or versions ` +
          `(config hash ${found.config_hash.slice(0, 12)}, now ${configHash.slice(0, 12)}): start a new evaluation id`,
      });
    }
    return summary(found, true);
  }
  const problem = file.problems.find((p) => p.id === input.taskId);
  if (!problem) {
    throw ApplicationFailure.create({
      type: BENCHMARK_FILE_ERROR,
      nonRetryable: true,
      message: `${input.benchmark} ${input.group} has no problem ${JSON.stringify(input.taskId)} in ${file.path}`,
    });
  }

  const taskId = `${input.benchmark}/${input.group}/${input.taskId}`;
  const agent = {
    endpoint: input.policy,
    sampling: {
      // The model client sends seed + sample index, so trial i asks for seed i: distinct,
      // reproducible samples per trial where the server honours seeds.
      seed: 0,
      temperature: input.sampling.temperature,
      ...(input.sampling.topP !== undefined ? { topP: input.sampling.topP } : {}),
      ...(input.sampling.maxTokens !== undefined ? { maxTokens: input.sampling.maxTokens } : {}),
    },
  };
  const episode = EpisodeInputSchema.parse({
    episodeId: `${input.evaluationId}/${taskId}/t${input.trial}`,
    taskId,
    purpose: 'evaluation',
    sampleIndex: input.trial,
    policyVersion: input.policy.model,
    runId: input.evaluationId,
    agentRoleName: POLICY_ROLE,
    agent,
    // No simulator plays a part in a reasoning episode; the schema asks for the roles.
    toolSimulator: agent,
    userSimulator: agent,
    maxTurns: input.maxTurns,
  });
  const reasoning = {
    problemId: problem.id,
    kind: input.benchmark,
    scenario: problem.question,
    answer: problem.answer,
  };
  let outcome: Pick<
    TrialRow,
    'reward' | 'termination' | 'steps' | 'prompt_tokens' | 'completion_tokens' | 'failure'
  > & {
    detail: string;
    trajectory: unknown;
  };
  try {
    const state = await playReasoningEpisode(deps, reasoning, episode, input, hooks);
    const reward = await scoreReasoningEpisode(
      deps,
      { ...reasoning, aliases: problem.aliases },
      state,
      input.evaluationId,
      input.judge,
      hooks.signal,
    );
    outcome = {
      reward: reward.reward,
      termination: state.endReason!,
      steps: state.turns,
      prompt_tokens: state.openingTokens ?? 0,
      completion_tokens: state.responseTokens,
      failure: null,
      detail: `${reward.method}: ${reward.detail}`.slice(0, 2_000),
      trajectory: state.messages,
    };
  } catch (error) {
    if (!(error instanceof ModelRequestRejectedError)) throw error;
    outcome = {
      reward: 0,
      termination: 'model_error',
      steps: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      failure: error.message.slice(0, 2_000),
      detail: 'the model refused the request',
      trajectory: [],
    };
  }
  const cpu = process.cpuUsage(started.cpu);
  await deps.pool.query(
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
      outcome.prompt_tokens,
      outcome.completion_tokens,
      outcome.failure,
      outcome.detail,
      JSON.stringify(outcome.trajectory),
      JSON.stringify(packages),
      JSON.stringify(data_version),
      JSON.stringify(config),
      configHash,
      (Date.now() - started.wall) / 1000,
      (cpu.user + cpu.system) / 1e6,
    ],
  );
  return summary((await storedTrial(deps.pool, key))!, false);
}
