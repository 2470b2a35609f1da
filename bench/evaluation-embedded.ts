/**
 * A real Evaluation run of the embedded model (SmolLM2-135M-Instruct, 8,192-token window, on the
 * CPU) on a few tasks of each benchmark, whatever it scores: BFCL-V4 multi_turn_base and tau2
 * airline through their official code on the Python evaluation worker, and the shipped math and
 * search samples with the real python and search tools on the CPU worker. No scripted answer
 * anywhere: the figures say what a 135M model does and what a trial costs on this machine, and
 * which prompts do not fit its window (those trials end as `model_error`).
 *
 * Prints per benchmark group: tasks, trials, Avg@k, terminations, model errors, tokens, and the
 * run's wall time; writes bench/results/evaluation-embedded.json. Needs .venv-eval and
 * .venv-sandbox (npm test installs them) and the embedded model (fetched once).
 *
 * Run: `npx tsx bench/evaluation-embedded.ts`. Knobs: BENCH_EMBEDDED_TASKS (tasks per group;
 * default 1), BENCH_EMBEDDED_MAX_TOKENS (per reply; default 256).
 */
import path from 'node:path';
import { indexCorpus } from '../activities/search/index.js';
import { closePools, getPool } from '../activities/store/db.js';
import { embeddedModelPath, ensureEmbeddedModel } from '../deploy/embedded-model/fetch-model.js';
import { REPO_ROOT } from '../deploy/paths.js';
import { loadEnvironment } from '../schemas/environment.js';
import { startEmbeddedModelServer } from '../services/embedded-model/index.js';
import type { EvaluationSummary } from '../workflows/evaluation.js';
import { resultWithin, startBenchRun, startBenchTemporal } from '../testkit/bench-run.js';
import { createTestDatabase } from '../testkit/database.js';
import { startEvalWorker } from '../testkit/eval-worker.js';
import { startTestWorker } from '../testkit/temporal.js';
import { writeResults } from './measure/results.js';

const TASKS = Number(process.env.BENCH_EMBEDDED_TASKS ?? 1);
const MAX_TOKENS = Number(process.env.BENCH_EMBEDDED_MAX_TOKENS ?? 256);

async function main(): Promise<void> {
  const modelPath = embeddedModelPath(loadEnvironment().MOCKWORLD_HOME); // before the bench's own home
  await ensureEmbeddedModel();
  const run = await startBenchRun('evaluation-embedded');
  try {
    const temporal = await startBenchTemporal(run);
    const db = await createTestDatabase('mw_bench');
    run.onCleanup('database', () => db.drop());
    run.onCleanup('pools', () => closePools());
    await indexCorpus(getPool(db.url), 'sample-corpus', path.join(REPO_ROOT, 'examples/search/corpus.jsonl'));
    const model = await startEmbeddedModelServer({ port: 0, modelPath });
    run.onCleanup('embedded model', () => model.close());
    const endpoint = { baseUrl: model.url, model: model.model };
    const worker = await startTestWorker(temporal.server.address, db.url);
    run.onCleanup('CPU worker', () => worker.close());
    const evalQueue = `eval-${run.nonce}`;
    const evalWorker = await startEvalWorker({
      TEMPORAL_ADDRESS: temporal.server.address,
      MOCKWORLD_EVAL_TASK_QUEUE: evalQueue,
      MOCKWORLD_EVAL_CONCURRENCY: '1',
      DATABASE_URL: db.url,
    });
    run.onCleanup('evaluation worker', () => evalWorker.kill());

    const examples = path.join(REPO_ROOT, 'examples', 'evaluation');
    const spec = {
      kind: 'Evaluation',
      name: 'embedded-model',
      policy: { endpoint },
      sampling: { temperature: 0, maxTokens: MAX_TOKENS },
      benchmarks: {
        bfcl: { categories: ['multi_turn_base'], limit: TASKS },
        tau2: {
          domains: ['airline'],
          limit: TASKS,
          trials: 1,
          maxSteps: 30,
          userSimulator: { endpoint, sampling: { temperature: 0, maxTokens: MAX_TOKENS } },
        },
        math: {
          datasets: [{ name: 'math-sample', path: path.join(examples, 'math-sample.jsonl') }],
          trials: 1,
          limit: TASKS,
          maxTurns: 4,
        },
        search: {
          datasets: [{ name: 'search-sample', path: path.join(examples, 'search-sample.jsonl') }],
          trials: 1,
          limit: TASKS,
          maxTurns: 4,
          backend: { kind: 'offline', collection: 'sample-corpus' },
          judge: { endpoint, sampling: { temperature: 0, maxTokens: 128 } },
        },
      },
      concurrency: 1,
      evalTaskQueue: evalQueue,
      bootstrapSamples: 200,
    };
    run.log(
      `Evaluation of ${model.model} on ${TASKS} task(s) per group (max ${MAX_TOKENS} tokens per reply)`,
    );
    const started = performance.now();
    const handle = await temporal.client.workflow.start('Evaluation', {
      args: [spec],
      taskQueue: worker.taskQueue,
      workflowId: `embedded-eval-${run.nonce}`,
    });
    const summary = await resultWithin<EvaluationSummary>(temporal, handle, 60 * 60_000);
    const wallSeconds = (performance.now() - started) / 1000;
    const groups = summary.metrics.groups.map((g) => ({
      benchmark: g.benchmark,
      group: g.group,
      tasks: g.tasks,
      trials: g.trials,
      avgAtK: g.avgAtK,
      terminations: g.terminations,
      modelErrors: g.modelErrors,
      promptTokens: g.promptTokens,
      completionTokens: g.completionTokens,
    }));
    console.log(
      `\nembedded model ${model.model}, ${TASKS} task(s) per group, wall ${wallSeconds.toFixed(0)} s\n`,
    );
    console.log('| benchmark | group | trials | Avg@k | how trials ended | model errors | tokens in / out |');
    console.log('|---|---|---|---|---|---|---|');
    for (const g of groups) {
      const ended = Object.entries(g.terminations)
        .map(([why, n]) => `${why} ${n}`)
        .join(', ');
      console.log(
        `| ${g.benchmark} | ${g.group} | ${g.trials} | ${g.avgAtK.toFixed(2)} | ${ended} | ${g.modelErrors} | ${g.promptTokens} / ${g.completionTokens} |`,
      );
    }
    await writeResults('evaluation-embedded', {
      model: model.model,
      tasksPerGroup: TASKS,
      maxTokens: MAX_TOKENS,
      wallSeconds,
      groups,
    });
  } finally {
    await run.cleanupAll();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
