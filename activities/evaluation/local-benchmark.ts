/**
 * The runner of the registered file benchmarks (benchmarks/index.ts) on the CPU worker: what every
 * family shares. Listing reads the group's JSONL; a trial is stored exactly once in `eval_trials`
 * under the hash of its settings, versions and data (a stored trial is returned, never run again),
 * and every policy call goes through the model ledger, so a retried attempt pays nothing twice.
 */
import type pg from 'pg';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { ListTasksResult, TrialSummary } from '../../schemas/evaluation-contract.js';
import {
  LocalListInputSchema,
  LocalTrialInputSchema,
  type LocalListInput,
  type LocalTrialInput,
} from '../../schemas/local-benchmark-trial.js';
import { LOCAL_BENCHMARK_SETTINGS } from '../../schemas/local-benchmarks.js';
import { ModelRoleSchema } from '../../schemas/model-endpoint.js';
import type { ModelClient } from '../llm/index.js';
import { POLICY_ROLE } from '../training/rollout.js';
import { callSettings } from '../world/model-roles.js';
import { dataVersion, listFileBenchmarkTasks, readBenchmarkFile } from './benchmark-file.js';
import { LOCAL_BENCHMARKS, type PolicyReply } from './benchmarks/index.js';
import { BenchmarkFileError } from './errors.js';
import { policyRole } from './reasoning-trial.js';
import { boundedTrial } from './trial-deadline.js';
import { configHash, packageVersions, storedTrial, storeTrial, type TrialKey } from './trial-store.js';

/** The problems of a group, in file order (`taskIds` picks some, `limit` the first). */
export async function listLocalBenchmarkTasks(data: LocalListInput): Promise<ListTasksResult> {
  return listFileBenchmarkTasks(LocalListInputSchema.parse(data));
}

/** What a trial needs from the worker. */
export interface LocalTrialDependencies {
  readonly pool: pg.Pool;
  readonly models: ModelClient;
  readonly signal?: AbortSignal;
}

/**
 * Runs one (problem, trial) of a registered family exactly once and stores it with the whole
 * transcript. A model that refuses the request (a 4xx) is the trial's recorded failure, reward 0;
 * an unreachable one is retried by the activity.
 */
export async function runLocalBenchmarkTrial(
  deps: LocalTrialDependencies,
  data: LocalTrialInput,
): Promise<TrialSummary> {
  const input = LocalTrialInputSchema.parse(data);
  const started = { wall: Date.now(), cpu: process.cpuUsage() };
  const settings = LOCAL_BENCHMARK_SETTINGS[input.benchmark].parse(input.settings ?? {});
  const file = await readBenchmarkFile(input.path);
  const { apiKeyEnv: _key, ...policy } = input.policy;
  const config = { policy, sampling: input.sampling, settings };
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

  const outcome = await boundedTrial({ signal: deps.signal }, input.wallSeconds, async ({ episode }) => {
    const transcript: ChatCompletionMessageParam[] = [];
    const usage = { steps: 0, promptTokens: 0, completionTokens: 0 };
    const role = callSettings(ModelRoleSchema.parse(policyRole(input.policy, input.sampling)), POLICY_ROLE, {
      runId: input.evaluationId,
      signal: episode.signal,
    });
    const ask = async (messages: ChatCompletionMessageParam[]): Promise<PolicyReply> => {
      const reply = await deps.models.chat({
        ...role,
        messages,
        sampleIndex: input.trial,
        policyVersion: input.policy.model,
      });
      const text = typeof reply.message.content === 'string' ? reply.message.content : '';
      transcript.splice(0, transcript.length, ...messages, { role: 'assistant', content: text });
      usage.steps += 1;
      usage.promptTokens += reply.usage.promptTokens;
      usage.completionTokens += reply.usage.completionTokens;
      return { text, finishReason: reply.finishReason };
    };
    const score = await LOCAL_BENCHMARKS[input.benchmark].runTrial({ problem, settings, ask });
    return {
      reward: score.reward,
      termination: 'completed',
      ...usage,
      failure: null,
      detail: score.detail,
      trajectory: transcript,
    };
  });
  return storeTrial(deps.pool, key, outcome, versions, started);
}
