/**
 * Math and search benchmark trials of an Evaluation run, on the CPU worker (issue 15; seed 000
 * Table 3): one (problem, trial) is one episode of the policy with the real `python` tool (and
 * `search`), scored by correctness as the seed does, stored in `eval_trials` like a tau2 or BFCL
 * trial. Exactly once: a stored trial is returned as it is, never run again; a retried attempt
 * resumes the episode from its last turn and pays nothing twice (the model ledger).
 */
import { EpisodeInputSchema } from '../../schemas/episode-input.js';
import type { ListTasksResult, TrialSummary } from '../../schemas/evaluation-contract.js';
import {
  ReasoningListInputSchema,
  ReasoningTrialInputSchema,
  type ReasoningListInput,
  type ReasoningTrialInput,
} from '../../schemas/reasoning-evaluation.js';
import { boundedTrial, type TrialSignals } from './trial-deadline.js';
import {
  playReasoningEpisode,
  scoreReasoningEpisode,
  type ReasoningRolloutDependencies,
} from '../training/reasoning-rollout.js';
import { loadTemplate, SHIPPED_TEMPLATES } from '../templates/templates.js';
import { POLICY_ROLE } from '../training/rollout.js';
import type { EpisodeHooks } from '../world/index.js';
import { dataVersion, listFileBenchmarkTasks, readBenchmarkFile } from './benchmark-file.js';
import { BenchmarkFileError } from './errors.js';
import {
  configHash,
  packageVersions,
  storedTrial,
  storeTrial,
  type TrialKey,
  type TrialOutcome,
} from './trial-store.js';

/** The problems of a math or search group, in file order (`taskIds` picks some, `limit` the first). */
export async function listReasoningBenchmarkTasks(data: ReasoningListInput): Promise<ListTasksResult> {
  return listFileBenchmarkTasks(ReasoningListInputSchema.parse(data));
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
  const templates = input.templates ?? SHIPPED_TEMPLATES;
  const { apiKeyEnv: _key, ...policy } = input.policy;
  const config = {
    policy,
    sampling: input.sampling,
    maxTurns: input.maxTurns,
    sandbox: input.sandbox ?? null,
    // Only a chosen prompt joins the hash, so trials stored before prompts were choosable still match.
    ...(input.templates
      ? {
          solveTemplate: (await loadTemplate('reasoningSolve', templates)).id,
          solveSystemTemplate: (await loadTemplate('reasoningSolveSystem', templates)).id,
        }
      : {}),
    search: input.search ?? null,
    judge: input.judge
      ? { model: input.judge.endpoint?.model ?? null, sampling: input.judge.sampling }
      : null,
  };
  const versions = { packages: packageVersions(), data: dataVersion(file), config, hash: '' };
  versions.hash = configHash(config, versions.packages, versions.data);
  const key: TrialKey = [input.evaluationId, input.benchmark, input.group, input.taskId, input.trial];
  const stored = await storedTrial(deps.pool, key, versions.hash);
  if (stored) return stored;
  const problem = file.problems.find((p) => p.id === input.taskId);
  if (!problem) {
    throw new BenchmarkFileError(
      `${input.benchmark} ${input.group}`,
      `has no problem ${JSON.stringify(input.taskId)} in ${file.path}`,
    );
  }

  const taskId = `${input.benchmark}/${input.group}/${input.taskId}`;
  const agent = policyRole(input.policy, input.sampling);
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
    templates,
  });
  const reasoning = {
    problemId: problem.id,
    kind: input.benchmark,
    scenario: problem.question,
    answer: problem.answer,
  };
  const outcome = await boundedTrial(hooks, input.wallSeconds, (signals) =>
    scoredEpisode(deps, input, reasoning, problem.aliases, episode, signals),
  );
  return storeTrial(deps.pool, key, outcome, versions, started);
}

/** The trial's episode with the real tools and its correctness reward, as the outcome to store. */
async function scoredEpisode(
  deps: ReasoningRolloutDependencies,
  input: ReturnType<typeof ReasoningTrialInputSchema.parse>,
  reasoning: Parameters<typeof playReasoningEpisode>[1],
  aliases: Parameters<typeof scoreReasoningEpisode>[1]['aliases'],
  episode: Parameters<typeof playReasoningEpisode>[2],
  signals: TrialSignals,
): Promise<TrialOutcome> {
  const state = await playReasoningEpisode(deps, reasoning, episode, input, signals.episode);
  const reward = await scoreReasoningEpisode(
    deps,
    { ...reasoning, aliases },
    state,
    input.evaluationId,
    input.judge,
    signals.activity,
  );
  return {
    reward: reward.reward,
    termination: state.endReason!,
    steps: state.turns,
    promptTokens: state.openingTokens ?? 0,
    completionTokens: state.responseTokens,
    failure: null,
    detail: `${reward.method}: ${reward.detail}`,
    trajectory: state.messages,
  };
}

/**
 * The policy as a model role: its endpoint, and the run's sampling with seed 0, which the model
 * client sends as seed + sample index, so trial i asks for seed i (distinct, reproducible samples
 * per trial where the server honours seeds).
 */
export function policyRole(policy: ReasoningTrialInput['policy'], sampling: ReasoningTrialInput['sampling']) {
  return {
    endpoint: policy,
    sampling: {
      seed: 0,
      temperature: sampling.temperature,
      ...(sampling.topP !== undefined ? { topP: sampling.topP } : {}),
      ...(sampling.maxTokens !== undefined ? { maxTokens: sampling.maxTokens } : {}),
    },
  };
}
