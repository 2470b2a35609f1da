/**
 * Held-out synthetic tasks as an Evaluation benchmark (issue 15): the kept tasks a GrpoTraining run
 * with the same seed and `heldOutTasks` holds out, each (task, trial) one episode of the policy in
 * the mock world, judged against the task's rubric (seed eq. 5), stored in `eval_trials` like any
 * trial. A judge that cannot grade the episode fails the trial, not retryable: a judge failure is
 * never a score.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { ListTasksResult, TrialSummary } from '../../schemas/evaluation-contract.js';
import {
  SyntheticListInputSchema,
  SyntheticTrialInputSchema,
  type SyntheticListInput,
  type SyntheticTrialInput,
} from '../../schemas/synthetic-evaluation.js';
import { canonicalJson, type ModelClient } from '../llm/index.js';
import { ensureRubricControls, judgeOrRecordUnjudged } from '../reward/index.js';
import { TrainingPlanError } from '../training/errors.js';
import { POLICY_ROLE } from '../training/rollout.js';
import { splitHeldOut } from '../training/sampling.js';
import type { EpisodeHooks, EpisodeRunner } from '../world/index.js';
import { policyRole } from './reasoning-trial.js';
import { boundedTrial, type TrialSignals } from './trial-deadline.js';
import {
  configHash,
  packageVersions,
  selectTasks,
  storedTrial,
  storeTrial,
  type TrialKey,
  type TrialOutcome,
} from './trial-store.js';
import { BenchmarkFileError, EvalJudgeFailed } from './errors.js';

/** The held-out tasks, as GrpoTraining's planIteration splits them (same seed, same count). */
export async function listSyntheticBenchmarkTasks(
  pool: pg.Pool,
  data: SyntheticListInput,
): Promise<ListTasksResult> {
  const input = SyntheticListInputSchema.parse(data);
  const { rows } = await pool.query<{ task_id: string }>(
    `SELECT task_id FROM tasks WHERE run_id = $1 AND stage = 'kept' ORDER BY idx`,
    [input.synthesisRunId],
  );
  const kept = rows.map((row) => row.task_id);
  if (input.heldOutTasks > kept.length) {
    throw new TrainingPlanError(
      input.synthesisRunId,
      `benchmarks.synthetic.heldOutTasks (${input.heldOutTasks}) exceeds its ${kept.length} kept tasks`,
    );
  }
  const ids = selectTasks(
    splitHeldOut(kept, input.heldOutTasks, input.seed).heldOut,
    input,
    (absent) =>
      new BenchmarkFileError(
        'benchmarks.synthetic.taskIds',
        `${absent.slice(0, 10).join(', ')} not among the held-out tasks`,
      ),
  );
  return { taskIds: ids, packages: packageVersions(), data: await taskVersions(pool, ids) };
}

/** sha256 of each task as the world and the judge read it: a changed task is another task. */
async function taskVersions(pool: pg.Pool, taskIds: readonly string[]): Promise<Record<string, string>> {
  const { rows } = await pool.query<{ task_id: string; task: unknown }>(
    `SELECT task_id, json_build_array(instruction, hidden_context, tools, rubric) AS task
       FROM tasks WHERE task_id = ANY($1::text[])`,
    [taskIds],
  );
  return Object.fromEntries(
    rows.map((row) => [row.task_id, createHash('sha256').update(canonicalJson(row.task)).digest('hex')]),
  );
}

/** What a synthetic trial needs from the worker. */
export interface SyntheticTrialDependencies {
  readonly pool: pg.Pool;
  readonly models: ModelClient;
  readonly world: EpisodeRunner;
}

/** Runs one (task, trial) exactly once: the episode, its judgement, the stored row. */
export async function runSyntheticBenchmarkTrial(
  deps: SyntheticTrialDependencies,
  data: SyntheticTrialInput,
  hooks: EpisodeHooks = {},
): Promise<TrialSummary> {
  const input = SyntheticTrialInputSchema.parse(data);
  const started = { wall: Date.now(), cpu: process.cpuUsage() };
  const { apiKeyEnv: _key, ...policy } = input.policy;
  const role = (r: typeof input.judge) => ({ model: r.endpoint?.model ?? null, sampling: r.sampling });
  const config = {
    policy,
    sampling: input.sampling,
    maxTurns: input.maxTurns,
    toolSimulator: role(input.toolSimulator),
    userSimulator: role(input.userSimulator),
    judge: role(input.judge),
    templates: input.templates,
  };
  const versions = {
    packages: packageVersions(),
    data: await taskVersions(deps.pool, [input.taskId]),
    config,
    hash: '',
  };
  versions.hash = configHash(config, versions.packages, versions.data);
  const key: TrialKey = [input.evaluationId, 'synthetic', input.group, input.taskId, input.trial];
  const stored = await storedTrial(deps.pool, key, versions.hash);
  if (stored) return stored;

  const episodeId = `${input.evaluationId}/synthetic/${input.group}/${input.taskId}/t${input.trial}`;
  const outcome = await boundedTrial(hooks, input.wallSeconds, (signals) =>
    judgedEpisode(deps, input, episodeId, signals),
  );
  return storeTrial(deps.pool, key, outcome, versions, started);
}

/** The trial's episode in the mock world and its judgement, as the outcome to store. */
async function judgedEpisode(
  deps: SyntheticTrialDependencies,
  input: ReturnType<typeof SyntheticTrialInputSchema.parse>,
  episodeId: string,
  signals: TrialSignals,
): Promise<TrialOutcome> {
  const policyVersion = input.policy.model;
  const episode = await deps.world.runEpisode(
    {
      episodeId,
      taskId: input.taskId,
      purpose: 'evaluation',
      sampleIndex: input.trial,
      policyVersion,
      runId: input.evaluationId,
      agentRoleName: POLICY_ROLE,
      agent: policyRole(input.policy, input.sampling),
      toolSimulator: input.toolSimulator,
      userSimulator: input.userSimulator,
      maxTurns: input.maxTurns,
      templates: input.templates,
    },
    signals.episode,
  );
  const judgeDeps = { pool: deps.pool, models: deps.models, signal: signals.activity };
  const judgeInput = {
    taskId: input.taskId,
    judge: input.judge,
    runId: input.evaluationId,
    templates: input.templates,
    policyVersion,
  };
  // The judge's controls on this task (once per evaluation, by its first trial: the trials of a
  // task run at once, and two asking for the same controls would both pay) beside the judgement.
  const [judged] = await Promise.all([
    judgeOrRecordUnjudged(judgeDeps, { ...judgeInput, episodeId }),
    input.trial === 0 ? ensureRubricControls(judgeDeps, judgeInput) : undefined,
  ]);
  if ('unjudged' in judged) {
    throw new EvalJudgeFailed(episodeId, judged.unjudged);
  }
  const { rows } = await deps.pool.query<{
    messages: unknown;
    opening_tokens: number | null;
    response_tokens: number;
  }>('SELECT messages, opening_tokens, response_tokens FROM episodes WHERE episode_id = $1', [episodeId]);
  const fraction = (value: number | null) => (value === null ? '-' : value.toFixed(3));
  return {
    reward: judged.reward,
    termination: episode.endReason,
    steps: episode.turns,
    promptTokens: rows[0]!.opening_tokens ?? 0,
    completionTokens: rows[0]!.response_tokens,
    failure: null,
    detail:
      `sub-goals ${fraction(judged.subGoalFraction)}, interactions ${fraction(judged.interactionFraction)}, ` +
      `forbidden ${judged.forbiddenViolated ? 'violated' : 'kept'}`,
    trajectory: rows[0]!.messages,
  };
}
