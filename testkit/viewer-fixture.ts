/**
 * The data the viewer's browser test looks at, made quickly: a finished synthesis run played for
 * real on a worker (scripted models), then a 2-iteration GRPO run's rollouts played and judged
 * through the product's own rollout and judge code on that run's kept tasks (no trainer: its
 * step metrics are written as the trainer would return them), and a tiny scaling study whose
 * cells are recorded through the study's store with scores on a known scaling law.
 */
import path from 'node:path';
import { writeFile } from 'node:fs/promises';
import type { Client } from '@temporalio/client';
import { createModelClient } from '../activities/llm/index.js';
import { createRunActivities } from '../activities/runs.js';
import { getPool } from '../activities/store/db.js';
import { recordCellTrained, startCell } from '../activities/study/cells.js';
import { createTrainingActivities } from '../activities/training/index.js';
import { recordIterationMetrics, summarizeRollouts } from '../activities/training/metrics.js';
import { GrpoSpecSchema } from '../schemas/grpo-spec.js';
import { grpoFixtureScript, honestControlJudge } from './grpo-fixture.js';
import type { Reply, ScriptedRequest } from './model-server.js';
import { scriptedPersonas, synthesisScript } from './synthesis-script.js';

/** Tasks of the synthesis run (task i % 5 == 1 and 3 are rejected: 3 of 5 kept). */
export const VIEWER_TASKS = 5;
/** The study's budgets and seeds, and the law its scores follow. */
export const STUDY_BUDGETS = [1, 2, 4, 8, 16, 32] as const;
export const STUDY_LAW = { pInf: 0.6, a: 0.3, alpha: 0.5 } as const;

const judgeRule = (grpoFixtureScript as readonly { role: string; reply: unknown }[]).find(
  (r) => r.role === 'judge',
)!;

/**
 * Every role the fixture plays. The policy asks the user, looks the record up, then answers;
 * its answer names its sampling seed so rollouts of one task differ and the judge (which grades
 * by transcript parity) gives rewards that vary within a group.
 */
export function viewerScript(request: ScriptedRequest): Reply {
  if (request.role === 'judge') return (judgeRule.reply as (r: ScriptedRequest) => Reply)(request);
  if (request.role === 'judge-control') return honestControlJudge(request);
  if (request.role === 'policy') {
    const turn = request.body.messages.filter((m) => m.role === 'assistant').length;
    if (turn === 0)
      return { toolCalls: [{ name: 'ask_user', arguments: { question: 'Which record do you mean?' } }] };
    if (turn === 1) return { toolCalls: [{ name: 'lookup_record', arguments: { id: 'R-0' } }] };
    return `Done (sample ${request.body.seed ?? 0})${'.'.repeat(Number(request.body.seed ?? 0) % 2)}`;
  }
  return synthesisScript(request);
}

/** Ids of what {@link seedViewerData} made. */
export interface ViewerData {
  readonly synthesisRunId: string;
  readonly trainingRunId: string;
  readonly studyId: string;
  /** A kept task of the synthesis run. */
  readonly keptTaskId: string;
}

/** Runs and records everything; `modelsUrl` is a model server playing {@link viewerScript}. */
export async function seedViewerData(input: {
  databaseUrl: string;
  client: Client;
  taskQueue: string;
  modelsUrl: string;
  dir: string;
  nonce: string;
}): Promise<ViewerData> {
  const pool = getPool(input.databaseUrl);
  const endpoint = { baseUrl: input.modelsUrl, model: 'scripted' };
  const role = { endpoint };

  // 1. A synthesis run, for real.
  const synthesisRunId = `viewer-synthesis-${input.nonce}`;
  await writeFile(path.join(input.dir, 'personas.jsonl'), scriptedPersonas(VIEWER_TASKS, false));
  await input.client.workflow.execute('Synthesis', {
    args: [
      {
        name: 'viewer',
        personas: { path: path.join(input.dir, 'personas.jsonl') },
        tasks: VIEWER_TASKS,
        demonstrationsPerTask: 2,
        maxTurns: 6,
        coverageThreshold: 0.5,
        concurrency: 5,
        models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
      },
    ],
    taskQueue: input.taskQueue,
    workflowId: synthesisRunId,
  });
  const { rows: kept } = await pool.query<{ task_id: string }>(
    `SELECT task_id FROM tasks WHERE run_id = $1 AND stage = 'kept' ORDER BY idx LIMIT 2`,
    [synthesisRunId],
  );

  // 2. Two GRPO iterations: 2 tasks × 2 rollouts each, judged.
  const trainingRunId = `viewer-grpo-${input.nonce}`;
  const spec = GrpoSpecSchema.parse({
    kind: 'GrpoTraining',
    name: 'viewer',
    dataset: { synthesisRunId, heldOutTasks: 0 },
    policy: {
      base: { kind: 'tiny', seed: 0 },
      endpoint,
      sampling: { temperature: 1, maxTokens: 24, seed: 7 },
    },
    judge: role,
    toolSimulator: role,
    userSimulator: role,
    globalBatch: 2,
    miniBatch: 2,
    rolloutsPerTask: 2,
    maxTurns: 4,
    evaluateEvery: 0,
  });
  const runs = createRunActivities(input.databaseUrl);
  await runs.recordRunStart({ runId: trainingRunId, kind: 'GrpoTraining', spec });
  const training = createTrainingActivities(
    input.databaseUrl,
    createModelClient({ databaseUrl: input.databaseUrl }),
  );
  for (const iteration of [0, 1]) {
    for (const { task_id: taskId } of kept) {
      for (const sampleIndex of [0, 1]) {
        await training.runJudgedRollout({
          runId: trainingRunId,
          iteration,
          taskId,
          sampleIndex,
          policyVersion: `step-${iteration}`,
          policy: {
            endpoint: spec.policy.endpoint,
            sampling: { ...spec.policy.sampling, seed: 7 + sampleIndex + 2 * iteration },
          },
          toolSimulator: spec.toolSimulator,
          userSimulator: spec.userSimulator,
          maxTurns: spec.maxTurns,
          templates: spec.templates,
          world: spec.world,
          judge: spec.judge,
        });
      }
    }
    const rollouts = await summarizeRollouts(pool, { runId: trainingRunId, iteration });
    await recordIterationMetrics(pool, {
      runId: trainingRunId,
      iteration,
      policyVersion: `step-${iteration + 1}`,
      metrics: {
        iteration,
        policyVersion: `step-${iteration + 1}`,
        ...rollouts,
        // What trainer.grpoStep returns; the browser test needs the curves, not a trainer.
        trainer: {
          loss: 0.9 - 0.2 * iteration,
          grad_norm: 1.5 - 0.3 * iteration,
          kl: 0.01 * (iteration + 1),
          num_samples: 4,
        },
      },
    });
  }
  await runs.recordRunFinish({
    runId: trainingRunId,
    state: 'completed',
    summary: { iterations: 2, policyStep: 2 },
  });

  // 3. A tiny study: RS on the full pool, 6 budgets × 2 seeds, scores on STUDY_LAW ± 1 pp.
  const studyId = `viewer-study-${input.nonce}`;
  await runs.recordRunStart({
    runId: studyId,
    kind: 'ScalingStudy',
    spec: { kind: 'ScalingStudy', name: 'viewer' },
  });
  for (const budget of STUDY_BUDGETS) {
    for (const seed of [0, 1]) {
      const cellId = `rs-q4-r${budget}-s${seed}`;
      await startCell(pool, studyId, { cellId, protocol: 'rs', pool: 4, budget, seed });
      await recordCellTrained(pool, { studyId, cellId, steps: 4, metrics: { loss: 0.5 } });
      const score = STUDY_LAW.pInf - STUDY_LAW.a * budget ** -STUDY_LAW.alpha + (seed ? 0.01 : -0.01);
      await pool.query(
        `UPDATE study_cells SET examples = $3, score = $4, evaluated = 32, finished_at = now() WHERE study_id = $1 AND cell_id = $2`,
        [studyId, cellId, budget * 8, score],
      );
    }
  }
  // One cell still training: the grid shows its state.
  await startCell(pool, studyId, { cellId: 'rs-q2-r4-s0', protocol: 'rs', pool: 2, budget: 4, seed: 0 });
  return { synthesisRunId, trainingRunId, studyId, keptTaskId: kept[0]!.task_id };
}
