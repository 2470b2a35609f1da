/** The plain path of the GRPO benchmark: the same activities, in the same order and concurrency, no Temporal. */
import { createActivities } from '../../activities/index.js';
import { GrpoSpecSchema } from '../../schemas/grpo-spec.js';
import { plainActivityRunner } from '../measure/plain-activity.js';
import type { GrpoBenchSpec } from './world.js';

/** The timeouts GrpoGroup schedules runJudgedRolloutGroup with. */
const inContext = plainActivityRunner({ heartbeatTimeoutMs: 20_000, startToCloseTimeoutMs: 7_200_000 });

/** `mapBounded` of workflows/bounded.ts without the workflow: at most `limit` in flight, in item order. */
async function mapBoundedPlain<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>) {
  let next = 0;
  const results: R[] = new Array(items.length);
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]!);
      }
    }),
  );
  return results;
}

/**
 * Mirrors the rollout phase of workflows/grpo-training.ts + workflows/grpo-group.ts: `planIteration`,
 * then `groupsInFlight` groups at a time, each one runJudgedRolloutGroup (n rollouts, each then judged, at once).
 */
export async function runPlain(databaseUrl: string, runId: string, input: GrpoBenchSpec) {
  const spec = GrpoSpecSchema.parse(input); // what the workflow's validateSpec gives it
  const acts = createActivities({ databaseUrl });
  type Acts = typeof acts;
  const call = <K extends keyof Acts>(name: K, ...args: Parameters<Acts[K]>): ReturnType<Acts[K]> =>
    inContext(name, acts[name] as (...a: unknown[]) => Promise<unknown>, ...args) as ReturnType<Acts[K]>;
  const plan = await call('planIteration', {
    runId,
    synthesisRunId: spec.dataset.synthesisRunId,
    heldOutTasks: spec.dataset.heldOutTasks,
    globalBatch: spec.globalBatch,
    seed: spec.seed,
    iteration: 0,
  });
  const policyVersion = 'step-0';
  const timings = { runJudgedRolloutGroup: [] as number[] };
  const t0 = performance.now();
  await mapBoundedPlain(plan.taskIds, spec.rolloutConcurrency, async (taskId) => {
    const r0 = performance.now();
    const ended = await call('runJudgedRolloutGroup', {
      runId,
      iteration: 0,
      taskId,
      rollouts: spec.rolloutsPerTask,
      policyVersion,
      policy: { endpoint: spec.policy.endpoint, sampling: spec.policy.sampling },
      toolSimulator: spec.toolSimulator,
      userSimulator: spec.userSimulator,
      maxTurns: spec.maxTurns,
      templates: spec.templates,
      purpose: 'rollout',
      judge: spec.judge,
    });
    timings.runJudgedRolloutGroup.push(performance.now() - r0);
    // The bench's world never rejects a rollout (scripted simulators) and its judge always
    // answers well: a group that judged fewer than n shows that either did.
    if (ended.judged !== spec.rolloutsPerTask)
      throw new Error(`group of ${taskId}: ${JSON.stringify(ended)} of ${spec.rolloutsPerTask} rollouts`);
  });
  return { rolloutMs: performance.now() - t0, timings };
}
