/**
 * What the chaos harness runs while it injects faults: Synthesis runs on the scripted model world
 * of the synthesis tests, and GrpoTraining runs on fixture tasks with the real Python trainer and
 * policy server, the same shapes as the integration tests (small, but every stage real).
 */
import type { ScriptedRequest, Script } from '../../test/support/model-server';
import { query } from '../../test/support/database';

/** The fictitious synthesis run whose kept tasks the GRPO runs train on. */
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
}

/** The judge grades by the transcript: rewards vary within a group, so every group has a gradient. */
function judge(request: ScriptedRequest): string {
  const text = request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('');
  return JSON.stringify({
    forbidden: [{ index: 0, violated: false, evidence: '' }],
    subGoals: [
      { index: 0, achieved: true },
      { index: 1, achieved: text.length % 2 === 0 },
    ],
    requiredInteractions: [{ index: 0, satisfied: false }],
  });
}

/** The scripted judge, tool simulator and user simulator of the GRPO runs. */
export const grpoScript: Script = [
  { role: 'judge', reply: judge },
  { role: 'tool-simulator', reply: JSON.stringify({ equivalentTo: null, response: '{"id":"R-0"}' }) },
  { role: 'user-simulator', reply: 'The record id is R-0.' },
];

/** Inserts `count` kept tasks of {@link FIXTURE_SYNTHESIS_RUN}, as the GRPO tests do. */
export async function insertFixtureTasks(url: string, count: number): Promise<void> {
  const tool = {
    type: 'function',
    function: {
      name: 'lookup_record',
      description: 'Look up a record',
      parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    },
  };
  for (let idx = 0; idx < count; idx++) {
    await query(
      url,
      `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage, workflow, tools, forbidden, instruction, hidden_context, rubric)
       VALUES ($1, $2, $3, $4, 'kept', $5, $6, $7, $8, $9, $10)`,
      [
        fixtureTaskId(idx),
        FIXTURE_SYNTHESIS_RUN,
        idx,
        `p${idx}`,
        JSON.stringify(['Find the record', 'Fix it']),
        JSON.stringify([tool]),
        JSON.stringify(['Delete records']),
        `Please sort out record ${idx}.`,
        `The record id is R-${idx}.`,
        JSON.stringify({
          forbidden: ['Delete records'],
          subGoals: ['Found', 'Fixed'],
          requiredInteractions: ['Ask the id'],
        }),
      ],
    );
  }
}

export function fixtureTaskId(idx: number): string {
  return `${FIXTURE_SYNTHESIS_RUN}-task-${String(idx).padStart(5, '0')}`;
}

/**
 * A model endpoint of the scripted server as the specs name it: a short per-request timeout, so a
 * hung request (one of the injected faults) costs seconds, not the default two minutes.
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
) {
  const role = (offset: number) => ({
    endpoint: endpoint(modelUrl, 'scripted', 4_000),
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
) {
  const role = (offset: number) => ({
    endpoint: endpoint(modelUrl, 'scripted', 4_000),
    sampling: { temperature: 0, seed: 100_000 * (round + 1) + 10_000 * offset },
  });
  return {
    dataset: { synthesisRunId: FIXTURE_SYNTHESIS_RUN },
    policy: {
      base: { kind: 'tiny', seed: 0 },
      endpoint: endpoint(policyUrl, runId, 60_000),
      sampling: { temperature: 1, maxTokens: 24, seed: 7 + 1_000 * round },
    },
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
