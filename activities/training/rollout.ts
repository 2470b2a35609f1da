import type { EpisodeInputData } from '../../schemas/episode-input.js';
import type { GrpoSpec } from '../../schemas/grpo-spec.js';
import type { EpisodeHooks, EpisodeRunner, EpisodeSummary } from '../world/index.js';
import { trainingEpisodeId, type TrainingPurpose } from './episode-ids.js';

/** Ledger role of the policy's calls (`llm_calls.role`). */
export const POLICY_ROLE = 'policy';

/** Input of {@link runRollout}: ids and settings only. */
export interface RolloutInput {
  /** The training run (workflow id); it pays for the calls. */
  readonly runId: string;
  /** 0-based iteration (for evaluations: the iteration after which the policy is evaluated). */
  readonly iteration: number;
  readonly taskId: string;
  /** Member of the task's GRPO group (0..n-1); also the sample index of the policy's calls. */
  readonly sampleIndex: number;
  /** Trainer step whose weights the policy endpoint serves (0: the base model). */
  readonly policyVersion: string | number;
  readonly policy: Pick<GrpoSpec['policy'], 'endpoint' | 'sampling'>;
  readonly toolSimulator: GrpoSpec['toolSimulator'];
  readonly userSimulator: GrpoSpec['userSimulator'];
  readonly maxTurns: number;
  /** The policy's tool choice on its first turns (GrpoSpec.rolloutToolChoice); absent: every turn auto. */
  readonly turnToolChoice?: GrpoSpec['rolloutToolChoice'];
  /** The response's cap in the endpoint's tokens (seed App. A: 13,000); absent in older histories: none. */
  readonly maxResponseTokens?: number;
  readonly templates: GrpoSpec['templates'];
  /** What a simulator that gives no usable answer does; absent in histories from before the setting. */
  readonly world?: GrpoSpec['world'];
  /** Training rollout (default) or held-out evaluation; they get different episode ids. */
  readonly purpose?: TrainingPurpose;
}

/** The episode's small summary and its task. */
export interface RolloutSummary extends EpisodeSummary {
  readonly taskId: string;
}

/**
 * Plays (or resumes) one episode of the policy on a task in the mock world, with the
 * deterministic id of {@link trainingEpisodeId}; the transcript stays in `episodes`.
 */
export async function runRollout(
  world: EpisodeRunner,
  input: RolloutInput,
  hooks: EpisodeHooks = {},
): Promise<RolloutSummary> {
  const summary = await world.runEpisode(rolloutEpisode(input), hooks);
  return { ...summary, taskId: input.taskId };
}

/** The episode of a rollout (or held-out evaluation): the policy's, under its deterministic id. */
export function rolloutEpisode(input: RolloutInput): EpisodeInputData {
  const purpose = input.purpose ?? 'rollout';
  return {
    episodeId: trainingEpisodeId(input.runId, input.iteration, input.taskId, input.sampleIndex, purpose),
    taskId: input.taskId,
    purpose,
    sampleIndex: input.sampleIndex,
    policyVersion: String(input.policyVersion),
    runId: input.runId,
    agentRoleName: POLICY_ROLE,
    agent: { endpoint: input.policy.endpoint, sampling: input.policy.sampling },
    toolSimulator: input.toolSimulator,
    userSimulator: input.userSimulator,
    maxTurns: input.maxTurns,
    turnToolChoice: input.turnToolChoice,
    maxResponseTokens: input.maxResponseTokens,
    templates: input.templates,
    world: input.world,
  };
}
