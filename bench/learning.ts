/**
 * Does it learn? The embedded model's real weights (SmolLM2-135M-Instruct, the GGUF the demo
 * serves, de-quantized by the trainer) trained with GRPO through the same workflows a user runs,
 * and evaluated before and after on held-out problems:
 *
 *   1. Evaluation of the base policy on held-out additions (k trials per problem),
 *   2. GrpoTraining on the training additions, rewarded by answer correctness (no judge),
 *   3. SFT (seed 000 App. B): a Synthesis run with the base as teacher, rejection-sampled to
 *      correct answers on the training problems (as many samples per problem as one GRPO epoch
 *      rolls out), and SftTraining on the correct solutions,
 *   4. the same Evaluation of the SFT and GRPO checkpoints, each compared with (1) by the
 *      evaluation worker's paired test (bootstrap interval and sign-flip p-value over problems).
 *
 * Prints the before/after table, the reward and tool-use fraction per iteration, and writes
 * bench/results/learning.json and bench/results/learning-reward.svg. The task family and why it
 * was chosen: bench/learning/problems.ts. Needs the three venvs (npm test installs them).
 *
 * Run: `npx tsx bench/learning.ts`. Knobs (env): LEARN_HELD_OUT (problems held out, default 32),
 * LEARN_TRAIN (training problems used, default all 49), LEARN_EPOCHS (GRPO epochs, default 2),
 * LEARN_SFT_EPOCHS (default 3), LEARN_BATCH (problems per iteration and per SFT step, default 16),
 * LEARN_GROUP (rollouts per problem, and teacher samples per problem, default 8), LEARN_LR
 * (default 1e-5), LEARN_TEMPERATURE (0.7), LEARN_TRIALS (evaluation trials per problem, default
 * 4), LEARN_MAX_TOKENS (24).
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { renderChartSvg } from '../activities/charts/render.js';
import { rewardChartSpec } from '../activities/charts/training-charts.js';
import { getPool } from '../activities/store/db.js';
import { readIterationMetrics } from '../activities/training/metrics.js';
import type { EvaluationSummary } from '../workflows/evaluation.js';
import type { GrpoSummary } from '../workflows/grpo-training.js';
import type { SftSummary } from '../workflows/sft-training.js';
import type { SynthesisSummary } from '../workflows/synthesis.js';
import { query } from '../testkit/database.js';
import { startEvalWorker } from '../testkit/eval-worker.js';
import { insertFixtureProblems } from '../testkit/grpo-fixture.js';
import { splitProblems, writeBenchmarkFile } from './learning/problems.js';
import { startLearningStack, type Stage } from './learning/stack.js';
import { RESULTS_DIR, writeResults } from './measure/results.js';

const knob = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const SETTINGS = {
  heldOut: knob('LEARN_HELD_OUT', 32),
  trainProblems: knob('LEARN_TRAIN', 81),
  epochs: knob('LEARN_EPOCHS', 2),
  batch: knob('LEARN_BATCH', 16),
  group: knob('LEARN_GROUP', 8),
  learningRate: knob('LEARN_LR', 1e-5),
  temperature: knob('LEARN_TEMPERATURE', 0.7),
  trials: knob('LEARN_TRIALS', 4),
  sftEpochs: knob('LEARN_SFT_EPOCHS', 3),
  maxTokens: knob('LEARN_MAX_TOKENS', 24),
  splitSeed: 7,
};
const TRAIN_RUN = 'learning-additions';
const GROUP = 'additions-heldout';
const TEMPLATES = {
  version: 'v1',
  overrides: {
    reasoningSolve: path.resolve('bench/learning/complete-the-answer.md'),
    reasoningSolveSystem: path.resolve('bench/learning/no-system.md'),
  },
} as const;

async function main(): Promise<void> {
  const stack = await startLearningStack('learning');
  const { run, db, baseUrl, base, gpuQueue, stages, timed, execute } = stack;
  try {
    const split = splitProblems(SETTINGS.heldOut, SETTINGS.splitSeed);
    const { heldOut } = split;
    const train = split.train.slice(0, SETTINGS.trainProblems);
    await insertFixtureProblems(
      db.url,
      TRAIN_RUN,
      train.map((p) => ({ kind: 'math' as const, scenario: p.question, answer: p.answer })),
    );
    const heldOutFile = path.join(run.dir, 'additions-heldout.jsonl');
    await writeBenchmarkFile(heldOutFile, heldOut);

    const evalQueue = `learning-eval-${run.nonce}`;
    const evalWorker = await startEvalWorker({
      TEMPORAL_ADDRESS: stack.temporal.server.address,
      MOCKWORLD_EVAL_TASK_QUEUE: evalQueue,
      DATABASE_URL: db.url,
    });
    run.onCleanup('evaluation worker', () => evalWorker.kill());

    const grpoRunId = `learning-grpo-${run.nonce}`;
    const sftRunId = `learning-sft-${run.nonce}`;
    const sampling = { temperature: SETTINGS.temperature, maxTokens: SETTINGS.maxTokens };
    const evaluate = (name: string, runId: string, step: number, compareWith?: string) =>
      timed(`evaluation ${name} (step ${step})`, async () => {
        const workflowId = `learning-eval-${name}-${run.nonce}`;
        const summary = await execute<EvaluationSummary>('Evaluation', workflowId, {
          name,
          policy: { checkpoint: { runId, step, server: { baseUrl } } },
          sampling,
          benchmarks: {
            math: {
              datasets: [{ name: GROUP, path: heldOutFile }],
              trials: SETTINGS.trials,
              maxTurns: 2,
              templates: TEMPLATES,
            },
          },
          concurrency: 4,
          evalTaskQueue: evalQueue,
          bootstrapSamples: 10_000,
          ...(compareWith ? { compareWith } : {}),
        });
        return { workflowId, summary };
      });

    // Step 0 before the run is registered: the policy server serves its --base, the same GGUF.
    const before = await evaluate('base', grpoRunId, 0);

    // SFT (seed 000 App. B): the base as its own teacher, rejection-sampled to correct answers on
    // the training problems, as many samples per problem as one GRPO epoch rolls out.
    const teacherRunId = `learning-teacher-${run.nonce}`;
    const seedsFile = path.join(run.dir, 'additions-train.jsonl');
    await writeFile(
      seedsFile,
      train.map((p) => JSON.stringify({ question: p.question, answer: p.answer, kind: 'math' })).join('\n'),
    );
    const teacher = { endpoint: { baseUrl, model: `${grpoRunId}@0` }, sampling };
    const demonstrations = await timed('Synthesis (teacher demonstrations, rejection sampling)', () =>
      execute<SynthesisSummary>('Synthesis', teacherRunId, {
        name: 'learning-teacher',
        personas: { path: 'personas.jsonl' },
        tasks: 0,
        reasoning: {
          seeds: { path: seedsFile },
          problems: train.length,
          solutions: SETTINGS.group,
          rewrite: false,
          keep: 'correct',
        },
        concurrency: 4,
        models: { teacher, toolSimulator: teacher, userSimulator: teacher, rubricExtractor: teacher },
        templates: TEMPLATES,
      }),
    );
    const sft = await timed('SftTraining', () =>
      execute<SftSummary>('SftTraining', sftRunId, {
        dataset: { synthesisRunId: teacherRunId, source: 'reasoning' },
        policy: { base },
        epochs: SETTINGS.sftEpochs,
        globalBatch: SETTINGS.batch,
        learningRate: SETTINGS.learningRate,
        minLearningRate: SETTINGS.learningRate / 10,
        warmupRatio: 0,
        maxSeqLen: 512,
        gpuTaskQueue: gpuQueue,
      }),
    );
    const afterSft = await evaluate('sft', sftRunId, sft.steps, before.workflowId);

    const grpo = await timed('GrpoTraining', () =>
      execute<GrpoSummary>('GrpoTraining', grpoRunId, {
        dataset: {
          synthesisRunId: TRAIN_RUN,
          toolUseTasks: 0,
          reasoning: {},
        },
        policy: { base, endpoint: { baseUrl, model: grpoRunId }, sampling: { ...sampling, topP: 1 } },
        globalBatch: SETTINGS.batch,
        miniBatch: SETTINGS.batch / 2,
        rolloutsPerTask: SETTINGS.group,
        maxTurns: 2,
        epochs: SETTINGS.epochs,
        learningRate: SETTINGS.learningRate,
        templates: TEMPLATES,
        gpuTaskQueue: gpuQueue,
      }),
    );
    const after = await evaluate('grpo', grpoRunId, grpo.policyStep, before.workflowId);

    const iterations = await readIterationMetrics(getPool(db.url), grpoRunId);
    const toolUse = await query(
      db.url,
      `SELECT split_part(substr(episode_id, length($1) + 2), '/', 1) AS iteration,
              avg((tool_calls > 0)::int)::float AS fraction, count(*)::int AS rollouts
         FROM episodes WHERE starts_with(episode_id, $1 || '/') AND purpose = 'rollout'
        GROUP BY 1`,
      [grpoRunId],
    );
    const curve = iterations.map(({ iteration, metrics }) => ({
      iteration,
      rewardMean: Number(metrics.rewardMean),
      rewardStd: Number(metrics.rewardStd),
      zeroVarianceGroups: Number(metrics.zeroVarianceGroups),
      toolUse: (toolUse as Array<{ iteration: string; fraction: number }>).find(
        (row) => row.iteration === `it${iteration}`,
      )?.fraction,
    }));
    const svg = await renderChartSvg(rewardChartSpec(grpoRunId, iterations));
    await writeFile(path.join(RESULTS_DIR, 'learning-reward.svg'), svg);
    const arms = [
      { name: 'base (GGUF)', summary: before.summary },
      { name: `SFT (${sft.dataset.examples} demonstrations, ${sft.steps} steps)`, summary: afterSft.summary },
      { name: `GRPO (${grpo.iterations} iterations)`, summary: after.summary },
    ];
    const teacherNote =
      `teacher: ${demonstrations.kept} of ${train.length} training problems had a correct one of ` +
      `${SETTINGS.group} samples (${sft.dataset.demonstrations} correct solutions)`;
    report(arms, teacherNote, curve, stages);
    await writeResults('learning', {
      settings: SETTINGS,
      trainProblems: train.length,
      heldOutProblems: heldOut.length,
      base: groupOf(before.summary),
      sft: {
        ...groupOf(afterSft.summary),
        ...pairedOf(afterSft.summary),
        step: sft.steps,
        dataset: sft.dataset,
      },
      grpo: {
        ...groupOf(after.summary),
        ...pairedOf(after.summary),
        step: grpo.policyStep,
        iterations: grpo.iterations,
      },
      teacher: {
        kept: demonstrations.kept,
        rejected: demonstrations.rejected,
        byReason: demonstrations.rejectedByReason,
      },
      curve,
      stages,
    });
  } finally {
    await run.cleanupAll();
  }
}

function groupOf(summary: EvaluationSummary) {
  const group = summary.metrics.groups.find((g) => g.group === GROUP)!;
  return {
    avgAtK: group.avgAtK,
    avgAtKCi: group.avgAtKCi,
    passHatK: group.passHatK,
    trials: group.trials,
    tasks: group.tasks,
  };
}

function pairedOf(summary: EvaluationSummary) {
  const paired = summary.metrics.comparison?.groups.find((g) => g.group === GROUP);
  return paired ? { difference: paired.difference, differenceCi: paired.ci, pValue: paired.pValue } : {};
}

function report(
  arms: ReadonlyArray<{ name: string; summary: EvaluationSummary }>,
  teacherNote: string,
  curve: ReadonlyArray<{
    iteration: number;
    rewardMean: number;
    zeroVarianceGroups: number;
    toolUse?: number;
  }>,
  stages: readonly Stage[],
): void {
  const k = SETTINGS.trials;
  const fmt = (v: number) => v.toFixed(3);
  const ci = (c: readonly number[]) => `[${fmt(c[0]!)}, ${fmt(c[1]!)}]`;
  console.log(
    `\nheld-out additions: ${SETTINGS.heldOut} problems × ${k} trials, temperature ${SETTINGS.temperature}; ${teacherNote}\n`,
  );
  console.log(`| policy | Avg@${k} | 95% CI | pass^1 | pass^${k} | paired difference vs base | 95% CI | p |`);
  console.log('|---|---|---|---|---|---|---|---|');
  for (const { name, summary } of arms) {
    const g = groupOf(summary);
    const paired = pairedOf(summary);
    const diff =
      paired.difference === undefined
        ? '— | — | —'
        : `${paired.difference >= 0 ? '+' : ''}${fmt(paired.difference)} | ${ci(paired.differenceCi!)} | ${paired.pValue?.toPrecision(2) ?? 'n/a'}`;
    console.log(
      `| ${name} | ${fmt(g.avgAtK)} | ${ci(g.avgAtKCi)} | ${fmt(g.passHatK['1']!)} | ${fmt(g.passHatK[String(k)]!)} | ${diff} |`,
    );
  }
  console.log(
    '\n| GRPO iteration | rollout reward (mean) | groups without variance | rollouts using the python tool |',
  );
  console.log('|---|---|---|---|');
  for (const point of curve) {
    const tool = point.toolUse === undefined ? 'n/a' : `${(point.toolUse * 100).toFixed(0)}%`;
    console.log(`| ${point.iteration} | ${fmt(point.rewardMean)} | ${point.zeroVarianceGroups} | ${tool} |`);
  }
  console.log('\n| stage | wall |\n|---|---|');
  for (const stage of stages) console.log(`| ${stage.name} | ${(stage.seconds / 60).toFixed(1)} min |`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
