/**
 * What the chaos harness runs while it injects faults: Synthesis runs on the scripted model world
 * of the synthesis tests, GrpoTraining runs on fixture tasks with the real Python trainer and
 * policy server, and (with fault (i)) Evaluation runs of BFCL and tau2 trials on the Python
 * evaluation worker against a ground-truth replay, the same shapes as the integration tests
 * (small, but every stage real).
 */
import { fixturePolicy } from '../grpo-fixture.js';

/** The fictitious synthesis run whose kept tasks (testkit/grpo-fixture.ts) the GRPO runs train on. */
export const FIXTURE_SYNTHESIS_RUN = 'chaos-fixture';

/** Settings of the workload. */
export interface WorkloadOptions {
  /** Tasks of each synthesis run. */
  readonly synthesisTasks: number;
  /** Demonstrations per synthesis task. */
  readonly demonstrations: number;
  /** Synthesis tasks in flight at once. */
  readonly synthesisConcurrency: number;
  /** Iterations (= trainer steps) of each GRPO run. */
  readonly grpoIterations: number;
  /** Fixture tasks each GRPO iteration trains on. */
  readonly grpoTasks: number;
  /** Rollouts per task (group size). */
  readonly grpoRollouts: number;
  /** Evaluation runs (with fault (i)): BFCL multi_turn_base tasks and tau2 airline tasks, one trial each. */
  readonly evaluationBfclTasks: number;
  readonly evaluationTau2Tasks: number;
  /** The replay model server's latency per call (so that a kill lands inside a trial). */
  readonly evaluationLatencyMs: number;
}

/**
 * A model endpoint of the scripted server as the specs name it, with the harness's per-request
 * timeout: short, so that a hung request (one of the injected faults) costs seconds, not the
 * default two minutes; longer than the slowest answer of a slow window (g) when there are some.
 */
function endpoint(baseUrl: string, model: string, timeoutMs: number) {
  return { baseUrl, model, timeoutMs };
}

/**
 * The spec of synthesis run number `round`. Every role samples with its own seed and the seeds move
 * with the round, so no two calls of the workload send the same request body (another round would
 * otherwise be answered from the cache of the first, and an answer paid twice could not be told
 * from two calls that happen to be equal).
 */
export function synthesisSpec(
  options: WorkloadOptions,
  personasPath: string,
  modelUrl: string,
  round: number,
  timeoutMs: number,
) {
  const role = (offset: number) => ({
    endpoint: endpoint(modelUrl, 'scripted', timeoutMs),
    sampling: { seed: 100_000 * (round + 1) + 10_000 * offset },
  });
  return {
    personas: { path: personasPath },
    tasks: options.synthesisTasks,
    demonstrationsPerTask: options.demonstrations,
    maxTurns: 6,
    concurrency: options.synthesisConcurrency,
    seed: 1_000 * round,
    models: { teacher: role(0), toolSimulator: role(1), userSimulator: role(2), rubricExtractor: role(3) },
  };
}

/** The spec of GRPO run number `round` (policy server in multi-run mode: the model names the run). */
export function grpoSpec(
  options: WorkloadOptions,
  runId: string,
  modelUrl: string,
  policyUrl: string,
  gpuTaskQueue: string,
  round: number,
  timeoutMs: number,
) {
  const role = (offset: number) => ({
    endpoint: endpoint(modelUrl, 'scripted', timeoutMs),
    sampling: { temperature: 0, seed: 100_000 * (round + 1) + 10_000 * offset },
  });
  return {
    dataset: { synthesisRunId: FIXTURE_SYNTHESIS_RUN },
    policy: fixturePolicy(endpoint(policyUrl, runId, 60_000), 7 + 1_000 * round),
    judge: role(0),
    toolSimulator: role(1),
    userSimulator: role(2),
    globalBatch: options.grpoTasks,
    miniBatch: 1,
    rolloutsPerTask: options.grpoRollouts,
    maxTurns: 2,
    learningRate: 1e-3,
    epochs: options.grpoIterations,
    seed: round,
    gpuTaskQueue,
  };
}

/**
 * The spec of Evaluation run number `round`: the workload's BFCL and tau2 tasks against the replay
 * server (its policy and user simulator), 2 trials in flight, on the evaluation worker's queue.
 */
export function evaluationSpec(
  workload: { readonly bfclTasks: readonly string[]; readonly tau2Tasks: readonly string[] },
  modelUrl: string,
  evalTaskQueue: string,
  round: number,
) {
  return {
    kind: 'Evaluation' as const,
    name: `chaos-r${round}`,
    policy: { endpoint: { baseUrl: modelUrl, model: 'replay-policy' } },
    benchmarks: {
      ...(workload.bfclTasks.length
        ? { bfcl: { categories: ['multi_turn_base'], taskIds: [...workload.bfclTasks] } }
        : {}),
      ...(workload.tau2Tasks.length
        ? {
            tau2: {
              domains: ['airline'],
              taskIds: [...workload.tau2Tasks],
              trials: 1,
              userSimulator: { endpoint: { baseUrl: modelUrl, model: 'replay-user' } },
            },
          }
        : {}),
    },
    concurrency: 2,
    evalTaskQueue,
    bootstrapSamples: 200,
  };
}
