import { patched, proxyActivities } from '@temporalio/workflow';
import type { MockworldActivities } from '../activities/index.js';
import type { GrpoSpec, ReasoningMix } from '../schemas/grpo-spec.js';
import { LONG_ACTIVITY } from './activity-options.js';

// The judge's UngradableRubricError and EpisodeNotGradableError are among LONG_ACTIVITY's
// non-retryable types, with every other activity error a retry cannot fix.
const activities = proxyActivities<MockworldActivities>(LONG_ACTIVITY);

/** One task's rollout group in one iteration. */
export interface GrpoGroupInput {
  readonly runId: string;
  readonly iteration: number;
  readonly taskId: string;
  readonly policyVersion: string;
  readonly purpose: 'rollout' | 'evaluation';
  readonly rollouts: number;
  /** `reasoning`: the task is a reasoning problem of the mix (absent: a tool-use task). */
  readonly kind?: 'reasoning';
  readonly spec: Pick<
    GrpoSpec,
    'policy' | 'judge' | 'toolSimulator' | 'userSimulator' | 'maxTurns' | 'templates'
  > &
    Partial<Pick<GrpoSpec, 'world' | 'maxResponseTokens' | 'rolloutToolChoice'>> & {
      /** The mix's reasoning tools (search backend, sandbox caps); set when the run mixes problems in. */
      readonly reasoning?: Pick<ReasoningMix, 'search' | 'sandbox'>;
    };
}

/**
 * A GRPO group (seed §3.2–3.3): n rollouts of one task by the current policy in the mock world,
 * each judged against the task rubric; or, for a reasoning problem of the mix (§3.4), n rollouts
 * with the real python / search tools, each scored by answer correctness. A judge failure fails the group (never a score). Rewards
 * stay in PostgreSQL (judgements); the group returns how many rollouts it judged.
 */
export async function GrpoGroup(input: GrpoGroupInput): Promise<number> {
  if (input.rollouts === 0) return 0; // nothing to schedule (the spec is not read)
  const { spec } = input;
  const task = {
    runId: input.runId,
    iteration: input.iteration,
    taskId: input.taskId,
    policyVersion: input.policyVersion,
    policy: { endpoint: spec.policy.endpoint, sampling: spec.policy.sampling },
    toolSimulator: spec.toolSimulator,
    userSimulator: spec.userSimulator,
    maxTurns: spec.maxTurns,
    maxResponseTokens: spec.maxResponseTokens,
    templates: spec.templates,
    world: spec.world,
    turnToolChoice: spec.rolloutToolChoice,
    purpose: input.purpose,
  };
  const rollout = (sampleIndex: number) => ({ ...task, sampleIndex });
  if (input.kind === 'reasoning') {
    // The real python (and search) tools, then the correctness reward: every rollout is scored.
    // One activity each: every rollout runs sandboxed Python, better spread over the workers.
    const scored = await Promise.all(
      Array.from({ length: input.rollouts }, (_, sampleIndex) =>
        activities.runReasoningRollout({
          ...rollout(sampleIndex),
          judge: spec.judge,
          reasoning: spec.reasoning ?? {},
        }),
      ),
    );
    return scored.length;
  }
  if (patched('grpo-group-one-activity')) {
    // The group's rollouts in one activity, judges included: one activity's events and dispatch
    // instead of n (each rollout still checkpoints on its own, so a retry resumes them all).
    const ended = await activities.runJudgedRolloutGroup({
      ...task,
      judge: spec.judge,
      rollouts: input.rollouts,
    });
    return ended.judged;
  }
  // Before: one activity per rollout, judge included, awaited as the activities' own promises.
  const judged = await Promise.all(
    Array.from({ length: input.rollouts }, (_, sampleIndex) =>
      activities.runJudgedRollout({ ...rollout(sampleIndex), judge: spec.judge }),
    ),
  );
  // Rollouts the world rejected are not judged (never a default score), and rollouts the judge
  // could not grade are recorded as unjudged: neither is counted.
  return judged.filter((rollout) => rollout.rejected === undefined && rollout.unjudged === undefined).length;
}
