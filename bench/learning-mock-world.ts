/**
 * Does it learn tool use in the mock world? The embedded model's real weights trained with GRPO
 * through the same workflows a user runs, on mock-world tasks whose rubrics are rule-checked
 * (docs/rubric-rules.md), so no judge model is needed:
 *
 *   1. the task family (bench/learning/tool-tasks.ts) imported as two datasets, as `mockworld
 *      import` stores them: training tasks and held-out tasks,
 *   2. a held-out evaluation of the base policy: each held-out task's GrpoGroup (purpose
 *      `evaluation`, k rollouts) run as a workflow, rollouts judged by the rules,
 *   3. GrpoTraining on the training tasks (`rolloutToolChoice: [task_tool]`: the policy server opens a
 *      tool call and the policy chooses the tool and writes its arguments),
 *   4. the same held-out evaluation of the final checkpoint, and the evaluation worker's paired test
 *      (metrics.summarize: bootstrap interval and sign-flip p-value over tasks).
 *
 * The mock world's tool simulator is the embedded model server. Prints the before/after table and
 * the reward curve, writes its figures and its reward SVG under bench/results/. Needs the
 * trainer and eval venvs (npm test installs them).
 *
 * Run: `npx tsx bench/learning-mock-world.ts`. Knobs (env): LEARN_HELD_OUT (held-out tasks, 16),
 * LEARN_TRAIN (training tasks, 24), LEARN_BATCH (tasks per iteration, 8), LEARN_GROUP (rollouts per
 * task, 8), LEARN_EPOCHS (1), LEARN_LR (2e-5), LEARN_TEMPERATURE (1.0), LEARN_TRIALS (held-out
 * rollouts per task, 4), LEARN_MAX_TOKENS (48: the call's opening, written by the server, counts).
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { renderChartSvg } from '../activities/charts/render.js';
import { rewardChartSpec } from '../activities/charts/training-charts.js';
import { getPool } from '../activities/store/db.js';
import { importTasks } from '../activities/synthesis/import.js';
import { readIterationMetrics } from '../activities/training/metrics.js';
import { EMBEDDED_MODEL } from '../deploy/embedded-model/fetch-model.js';
import type { ExportedTask } from '../schemas/exported-task.js';
import { GrpoSpecSchema, type GrpoSpec } from '../schemas/grpo-spec.js';
import { startEmbeddedModelServer } from '../services/embedded-model/index.js';
import { query } from '../testkit/database.js';
import type { GrpoGroupInput } from '../workflows/grpo-group.js';
import type { GrpoSummary } from '../workflows/grpo-training.js';
import { startLearningStack, type LearningStack, type Stage } from './learning/stack.js';
import { splitToolTasks } from './learning/tool-tasks.js';
import { RESULTS_DIR, writeResults } from './measure/results.js';

const knob = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const SETTINGS = {
  heldOut: knob('LEARN_HELD_OUT', 16),
  trainTasks: knob('LEARN_TRAIN', 24),
  batch: knob('LEARN_BATCH', 8),
  group: knob('LEARN_GROUP', 8),
  epochs: knob('LEARN_EPOCHS', 1),
  learningRate: knob('LEARN_LR', 2e-5),
  temperature: knob('LEARN_TEMPERATURE', 1.0),
  trials: knob('LEARN_TRIALS', 4),
  maxTokens: knob('LEARN_MAX_TOKENS', 48),
  splitSeed: 7,
};
const TEMPLATES = {
  version: 'v1',
  overrides: { agent: path.resolve('bench/learning/agent-tools.md') },
} as const;
/**
 * A server that answers one request at a time on a CPU core: two requests in flight and a long
 * timeout. With the default 32 in flight and 120 s, requests waited past their timeout in the
 * server's queue, were sent again, and the server kept generating answers nobody waited for.
 */
const ONE_CPU_SERVER = { maxConcurrency: 2, timeoutMs: 600_000 };
/** The first (and only) turn must be a call of one of the task's tools. */
const TOOL_CHOICE = ['task_tool'] as const;

interface HeldOut {
  readonly rows: HeldOutRow[];
}
interface HeldOutRow {
  readonly task_id: string;
  readonly reward: number;
  readonly right_tool: boolean;
  readonly right_city: boolean;
  readonly called: boolean;
}

async function main(): Promise<void> {
  const stack = await startLearningStack('learning-mock-world');
  const { run, db, baseUrl, base, gpuQueue, timed, execute } = stack;
  try {
    const split = splitToolTasks(SETTINGS.heldOut, SETTINGS.splitSeed);
    const trainRun = `tool-tasks-train-${run.nonce}`;
    const heldOutRun = `tool-tasks-heldout-${run.nonce}`;
    await importDataset(stack, trainRun, split.train.slice(0, SETTINGS.trainTasks));
    await importDataset(stack, heldOutRun, split.heldOut);

    const simulator = await timed('start the embedded model server (tool simulator)', async () => {
      const server = await startEmbeddedModelServer({ port: 0 });
      run.onCleanup('embedded model server', () => server.close());
      return {
        endpoint: { baseUrl: server.url, model: EMBEDDED_MODEL.name, ...ONE_CPU_SERVER },
        sampling: { temperature: 0, topP: 1, maxTokens: 128 },
      };
    });
    const grpoRunId = `learning-tools-${run.nonce}`;
    const sampling = { temperature: SETTINGS.temperature, topP: 1, maxTokens: SETTINGS.maxTokens };
    const spec = {
      dataset: { synthesisRunId: trainRun, heldOutTasks: 0 },
      policy: { base, endpoint: { baseUrl, model: grpoRunId, ...ONE_CPU_SERVER }, sampling },
      judge: simulator, // never called: every rubric item is rule-checked
      toolSimulator: simulator,
      userSimulator: simulator,
      maxTurns: 1,
      rolloutToolChoice: [...TOOL_CHOICE],
      templates: TEMPLATES,
      globalBatch: SETTINGS.batch,
      miniBatch: SETTINGS.batch / 2,
      rolloutsPerTask: SETTINGS.group,
      epochs: SETTINGS.epochs,
      learningRate: SETTINGS.learningRate,
      gpuTaskQueue: gpuQueue,
    };
    const parsed = GrpoSpecSchema.parse({ kind: 'GrpoTraining', ...spec });
    const evaluate = (step: number) =>
      timed(`held-out evaluation (step ${step})`, () =>
        evaluateHeldOut(stack, heldOutRun, parsed, grpoRunId, step),
      );

    // Step 0 before the run is registered: the policy server serves its --base, the same GGUF.
    const before = await evaluate(0);
    const grpo = await timed('GrpoTraining', () => execute<GrpoSummary>('GrpoTraining', grpoRunId, spec));
    const after = await evaluate(grpo.policyStep);

    const paired = await pairedTest(before, after);
    const iterations = await readIterationMetrics(getPool(db.url), grpoRunId);
    const rightTool = await rolloutShares(stack, grpoRunId);
    const curve = iterations.map(({ iteration, metrics }) => ({
      iteration,
      rewardMean: Number(metrics.rewardMean),
      zeroVarianceGroups: Number(metrics.zeroVarianceGroups),
      ...rightTool.get(iteration),
    }));
    const svg = await renderChartSvg(rewardChartSpec(grpoRunId, iterations));
    await writeFile(path.join(RESULTS_DIR, 'learning-mock-world-reward.svg'), svg);
    report(before, after, paired, grpo, curve, stack.stages);
    await writeResults('learning-mock-world', {
      settings: SETTINGS,
      trainTasks: Math.min(SETTINGS.trainTasks, split.train.length),
      heldOutTasks: split.heldOut.length,
      base: shares(before),
      grpo: { ...shares(after), step: grpo.policyStep, iterations: grpo.iterations },
      paired,
      curve,
      stages: stack.stages,
    });
  } finally {
    await run.cleanupAll();
  }
}

/** Stores tasks as `mockworld import` does, under dataset id `datasetId`. */
async function importDataset(stack: LearningStack, datasetId: string, tasks: readonly ExportedTask[]) {
  const file = path.join(stack.run.dir, `${datasetId}.jsonl`);
  const text = tasks.map((t) => JSON.stringify(t)).join('\n');
  await writeFile(file, text);
  await importTasks(getPool(stack.db.url), datasetId, file, text);
}

/**
 * The held-out evaluation of the policy at `step`: one GrpoGroup workflow per held-out task, as
 * GrpoTraining runs its own held-out groups (purpose `evaluation`, episode ids
 * `<runId>/eval<step>/<task>/r<k>`), with k = LEARN_TRIALS rollouts each.
 */
async function evaluateHeldOut(
  stack: LearningStack,
  heldOutRun: string,
  training: GrpoSpec,
  grpoRunId: string,
  step: number,
): Promise<HeldOut> {
  const runId = `${grpoRunId}-heldout`;
  const { rows: tasks } = await getPool(stack.db.url).query<{ task_id: string }>(
    'SELECT task_id FROM tasks WHERE run_id = $1 ORDER BY idx',
    [heldOutRun],
  );
  const endpoint = { ...training.policy.endpoint, model: `${grpoRunId}@${step}` };
  const spec: GrpoGroupInput['spec'] = {
    ...training,
    policy: { ...training.policy, endpoint },
  };
  for (let i = 0; i < tasks.length; i += 4) {
    await Promise.all(
      tasks.slice(i, i + 4).map(({ task_id: taskId }) => {
        const input: GrpoGroupInput = {
          runId,
          iteration: step,
          taskId,
          policyVersion: String(step),
          purpose: 'evaluation',
          rollouts: SETTINGS.trials,
          spec,
        };
        return stack.temporal.client.workflow.execute('GrpoGroup', {
          taskQueue: stack.worker.taskQueue,
          workflowId: `${runId}-eval${step}-${taskId}`,
          args: [input],
        });
      }),
    );
  }
  const rows = await query<HeldOutRow>(
    stack.db.url,
    `SELECT e.task_id, j.reward, e.tool_calls > 0 AS called,
            (j.verdicts->'subGoals'->0->>'achieved')::boolean AS right_tool,
            (j.verdicts->'subGoals'->1->>'achieved')::boolean AS right_city
       FROM episodes e JOIN judgements j USING (episode_id)
      WHERE starts_with(e.episode_id, $1)`,
    [`${runId}/eval${step}/`],
  );
  return { rows };
}

/** Per iteration of the run: the rollouts' share that called the right tool, and for the right city. */
async function rolloutShares(stack: LearningStack, grpoRunId: string) {
  const rows = await query<{ iteration: string; right_tool: number; right_city: number }>(
    stack.db.url,
    `SELECT split_part(substr(e.episode_id, length($1) + 2), '/', 1) AS iteration,
            avg((j.verdicts->'subGoals'->0->>'achieved')::boolean::int)::float AS right_tool,
            avg((j.verdicts->'subGoals'->1->>'achieved')::boolean::int)::float AS right_city
       FROM episodes e JOIN judgements j USING (episode_id)
      WHERE starts_with(e.episode_id, $1 || '/') AND e.purpose = 'rollout'
      GROUP BY 1`,
    [grpoRunId],
  );
  return new Map(
    rows.map((r) => [
      Number(r.iteration.replace(/^it/, '')),
      { rightTool: r.right_tool, rightCity: r.right_city },
    ]),
  );
}

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / Math.max(values.length, 1);

function shares(heldOut: HeldOut) {
  const { rows } = heldOut;
  return {
    trials: rows.length,
    reward: mean(rows.map((r) => r.reward)),
    called: mean(rows.map((r) => Number(r.called))),
    rightTool: mean(rows.map((r) => Number(r.right_tool))),
    rightCity: mean(rows.map((r) => Number(r.right_city))),
  };
}

interface Paired {
  readonly before: { avgAtK: number; avgAtKCi: number[]; passHatK: Record<string, number> };
  readonly after: { avgAtK: number; avgAtKCi: number[]; passHatK: Record<string, number> };
  readonly difference: number;
  readonly ci: number[];
  readonly pValue: number;
}

/** The evaluation worker's own summary and paired test (bench/learning/paired.py) of the two runs. */
async function pairedTest(before: HeldOut, after: HeldOut): Promise<Paired> {
  const input = JSON.stringify({ before: before.rows, after: after.rows });
  const child = promisify(execFile)('.venv-eval/bin/python', ['bench/learning/paired.py'], {
    maxBuffer: 16 * 1024 * 1024,
  });
  child.child.stdin!.end(input);
  return JSON.parse((await child).stdout) as Paired;
}

function report(
  before: HeldOut,
  after: HeldOut,
  paired: Paired,
  grpo: GrpoSummary,
  curve: ReadonlyArray<{
    iteration: number;
    rewardMean: number;
    zeroVarianceGroups: number;
    rightTool?: number;
    rightCity?: number;
  }>,
  stages: readonly Stage[],
): void {
  const k = SETTINGS.trials;
  const fmt = (v: number | undefined) => (v === undefined ? 'n/a' : v.toFixed(3));
  const pct = (v: number | undefined) => (v === undefined ? 'n/a' : `${(v * 100).toFixed(0)}%`);
  const ci = (c: readonly number[]) => `[${fmt(c[0])}, ${fmt(c[1])}]`;
  console.log(
    `\nheld-out tool tasks: ${SETTINGS.heldOut} tasks × ${k} rollouts, temperature ${SETTINGS.temperature}, rule-checked rubrics\n`,
  );
  console.log(
    `| policy | Avg@${k} | 95% CI | pass^${k} | right tool | right tool and city | paired difference | 95% CI | p |`,
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const [name, heldOut, summary, diff] of [
    ['base (GGUF)', before, paired.before, '— | — | —'],
    [
      `GRPO (${grpo.iterations} iterations)`,
      after,
      paired.after,
      `${paired.difference >= 0 ? '+' : ''}${fmt(paired.difference)} | ${ci(paired.ci)} | ${paired.pValue.toPrecision(2)}`,
    ],
  ] as const) {
    const s = shares(heldOut);
    console.log(
      `| ${name} | ${fmt(summary.avgAtK)} | ${ci(summary.avgAtKCi)} | ${fmt(summary.passHatK[String(k)])} | ${pct(s.rightTool)} | ${pct(s.rightCity)} | ${diff} |`,
    );
  }
  console.log(
    '\n| GRPO iteration | rollout reward (mean) | groups without variance | right tool | right tool and city |',
  );
  console.log('|---|---|---|---|---|');
  for (const p of curve) {
    console.log(
      `| ${p.iteration} | ${fmt(p.rewardMean)} | ${p.zeroVarianceGroups} | ${pct(p.rightTool)} | ${pct(p.rightCity)} |`,
    );
  }
  console.log('\n| stage | wall |\n|---|---|');
  for (const stage of stages) console.log(`| ${stage.name} | ${(stage.seconds / 60).toFixed(1)} min |`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
