/**
 * Batch vs online: the same Synthesis run with every call online, with its rubric extractor and
 * coverage judge in provider batch jobs (`mode: batch`), and with the teacher's stages (a)-(c) in
 * jobs too (its demonstrations stay online), through the real Temporal path (a dev server
 * of the bench's own, an in-process worker with MockworldPlugin, a fresh database per run), with
 * the scripted world of the integration tests. Prints cost and wall time side by side, each the
 * median of BENCH_REPEATS runs with its range, and writes bench/results/batch.json.
 *
 * The test model server plays the provider: online calls answer after BENCH_LATENCY_MS, a batch job
 * completes BENCH_JOB_MS after it is created (a real provider takes minutes to 24 h; the wall
 * figure scales with it, the cost figure does not). Prices: BENCH_PRICES "input,output" in USD per
 * million tokens (default 0.40,1.60), batch at half price as OpenAI publishes.
 *
 * Run: `npx tsx bench/batch.ts`. Knobs: BENCH_TASKS (default 24), BENCH_REPEATS (3),
 * BENCH_LATENCY_MS (200), BENCH_JOB_MS (3000).
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { createTestDatabase, query } from '../testkit/database.js';
import { startModelServer } from '../testkit/model-server.js';
import { scriptedPersonas, synthesisScript } from '../testkit/synthesis-script.js';
import { resultWithin, startBenchRun, startBenchTemporal } from '../testkit/bench-run.js';
import { MOCKWORLD_WORKFLOWS_PATH, MockworldPlugin } from '../workers/plugin.js';
import type { SynthesisSummary } from '../workflows/synthesis.js';
import { summarize, type Summary } from './measure/repeats.js';
import { writeResults } from './measure/results.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 24);
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 200);
const JOB_MS = Number(process.env.BENCH_JOB_MS ?? 3000);
const [INPUT_PRICE, OUTPUT_PRICE] = (process.env.BENCH_PRICES ?? '0.40,1.60').split(',').map(Number);
const JUDGE_ROLES = ['rubric-extractor', 'coverage-judge', 'coverage-judge-control'];
/** Which roles go in batch jobs: none, the judges, or the judges and the teacher's stages (a)-(c). */
const MODES = ['none', 'judges', 'judges + teacher stages'] as const;
type Mode = (typeof MODES)[number];

/** One run's figures, read from its ledger. */
interface RunFigures {
  readonly wallS: number;
  readonly totalUsd: number;
  readonly judgeUsd: number;
  readonly judgeCalls: number;
  readonly batchedCalls: number;
  readonly jobs: number;
  readonly kept: number;
}

async function ledgerFigures(url: string) {
  const [row] = await query<Omit<RunFigures, 'wallS' | 'kept'>>(
    url,
    `SELECT coalesce(sum(cost_usd), 0)::float8 AS "totalUsd",
            coalesce(sum(cost_usd) FILTER (WHERE role = ANY($1)), 0)::float8 AS "judgeUsd",
            count(*) FILTER (WHERE role = ANY($1))::int AS "judgeCalls",
            count(batch_job_id)::int AS "batchedCalls",
            (SELECT count(*)::int FROM llm_batch_jobs) AS jobs
       FROM llm_calls`,
    [JUDGE_ROLES],
  );
  return row!;
}

async function main(): Promise<void> {
  const run = await startBenchRun('batch');
  const { log, onCleanup } = run;
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    const temporal = await startBenchTemporal(run);
    const models = await startModelServer({ script: synthesisScript, latencyMs: LATENCY_MS, log: false });
    onCleanup('model server', () => models.close());
    models.batches.setCompletionDelay(JOB_MS);
    const personas = path.join(run.dir, 'personas.jsonl');
    await writeFile(personas, scriptedPersonas(TASKS, false));
    const nativeConnection = await NativeConnection.connect({ address: temporal.server.address });
    onCleanup('worker connection', () => nativeConnection.close());
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: MOCKWORLD_WORKFLOWS_PATH,
      logger: new DefaultLogger('WARN'),
    });
    const endpoint = {
      baseUrl: models.url,
      model: 'scripted',
      maxConcurrency: 256,
      prices: { inputPerMillion: INPUT_PRICE, outputPerMillion: OUTPUT_PRICE },
    };

    const runOnce = async (mode: Mode, repeat: number): Promise<RunFigures> => {
      const db = await createTestDatabase('mw_bench_batch');
      const dropDb = onCleanup(`database ${db.url}`, () => db.drop());
      const taskQueue = `batch-${MODES.indexOf(mode)}-${repeat}-${run.nonce}`;
      const worker = await Worker.create({
        connection: nativeConnection,
        taskQueue,
        workflowBundle,
        plugins: [new MockworldPlugin({ databaseUrl: db.url })],
      });
      const running = worker.run();
      const stopWorker = onCleanup(`worker ${taskQueue}`, async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running.catch(() => undefined);
      });
      const role = { endpoint };
      const batched = { ...role, mode: 'batch', batch: { maxWaitSeconds: 1, pollSeconds: 0.25 } };
      const judge = mode === 'none' ? role : batched;
      const teacher = mode === 'judges + teacher stages' ? batched : role;
      const started = performance.now();
      const handle = await temporal.client.workflow.start('Synthesis', {
        args: [
          {
            personas: { path: personas },
            tasks: TASKS,
            demonstrationsPerTask: 2,
            maxTurns: 6,
            concurrency: TASKS,
            models: { teacher, toolSimulator: role, userSimulator: role, rubricExtractor: judge },
          },
        ],
        taskQueue,
        workflowId: `batch-bench-${MODES.indexOf(mode)}-${repeat}-${run.nonce}`,
      });
      const summary = await resultWithin<SynthesisSummary>(temporal, handle, 600_000);
      const wallS = (performance.now() - started) / 1000;
      const figures = { wallS, kept: summary.kept, ...(await ledgerFigures(db.url)) };
      await stopWorker();
      await dropDb();
      log(`${mode} #${repeat}: ${wallS.toFixed(1)} s, $${figures.totalUsd.toFixed(6)}, ${figures.jobs} jobs`);
      return figures;
    };

    const runs = Object.fromEntries(MODES.map((m) => [m, [] as RunFigures[]])) as Record<Mode, RunFigures[]>;
    for (let repeat = 1; repeat <= REPEATS; repeat++) {
      for (const mode of MODES) runs[mode].push(await runOnce(mode, repeat));
    }
    report(runs);
  } finally {
    await run.cleanupAll();
  }
}

function report(runs: Record<Mode, RunFigures[]>): void {
  const rows = MODES.map((mode) => {
    const of = (pick: (r: RunFigures) => number) => summarize(runs[mode].map(pick));
    return {
      mode,
      wallS: of((r) => r.wallS),
      totalUsd: of((r) => r.totalUsd),
      judgeUsd: of((r) => r.judgeUsd),
      judgeCalls: of((r) => r.judgeCalls),
      batchedCalls: of((r) => r.batchedCalls),
      jobs: of((r) => r.jobs),
      kept: of((r) => r.kept),
    };
  });
  const cell = (s: Summary, digits: number) =>
    `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
  console.log(
    `\n> Synthesis of ${TASKS} tasks, median (min–max) of ${REPEATS} runs; online latency ${LATENCY_MS} ms, ` +
      `batch job turnaround ${JOB_MS} ms, prices $${INPUT_PRICE}/$${OUTPUT_PRICE} per M tokens, batch at 0.5×\n`,
  );
  console.log(
    '| in batch jobs | wall s | run cost USD | judge cost USD | judge calls | calls answered in batch jobs | jobs | kept tasks |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of rows) {
    console.log(
      `| ${r.mode} | ${cell(r.wallS, 1)} | ${cell(r.totalUsd, 6)} | ${cell(r.judgeUsd, 6)} | ` +
        `${r.judgeCalls.median} | ${r.batchedCalls.median} | ${r.jobs.median} | ${r.kept.median} |`,
    );
  }
  const [online, ...batched] = rows;
  for (const b of batched) {
    console.log(
      `> ${b.mode} in batch jobs ÷ all online: judge cost ${(b.judgeUsd.median / online!.judgeUsd.median).toFixed(3)}, ` +
        `run cost ${(b.totalUsd.median / online!.totalUsd.median).toFixed(3)}, wall ${(b.wallS.median / online!.wallS.median).toFixed(2)}×`,
    );
  }
  void writeResults('batch', {
    tasks: TASKS,
    repeats: REPEATS,
    latencyMs: LATENCY_MS,
    jobMs: JOB_MS,
    prices: { input: INPUT_PRICE, output: OUTPUT_PRICE },
    rows,
  });
}

await main();
