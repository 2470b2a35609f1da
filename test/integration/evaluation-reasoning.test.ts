import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { indexCorpus } from '../../activities/search/index.js';
import { getPool } from '../../activities/store/db.js';
import { splitHeldOut } from '../../activities/training/sampling.js';
import { REPO_ROOT } from '../../deploy/paths.js';
import type { EvaluationSummary } from '../../workflows/evaluation.js';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { startEvalWorker, type EvalWorkerProcess } from '../../testkit/eval-worker.js';
import { fixtureTaskId, grpoFixtureScript, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import {
  startModelServer,
  type ModelServer,
  type Reply,
  type ScriptedRequest,
} from '../../testkit/model-server.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';
import { recordHistory } from '../../testkit/vitest/histories.js';

/**
 * Math and search benchmarks of an Evaluation run (seed 000 Table 3) on the shipped sample files:
 * the CPU worker runs each (problem, trial) with the real sandboxed python tool and the offline
 * search index, stores it beside tau2's and BFCL's trials, and the evaluation worker computes the
 * same metrics for them. The scripted policy writes back what its program printed: trial 0 runs
 * the right program and trial 1 a wrong one, so math Avg@2 is 0.5 only if real Python ran.
 */
const PROGRAMS: Record<string, { right: string; wrong: string }> = {
  '23 boards': { right: 'print(23 * 17)', wrong: 'print(23 * 16)' },
  'from 1 to 50': { right: 'print(sum(range(1, 51)))', wrong: 'print(sum(range(1, 50)))' },
  'remainder when 2^10': { right: 'print(2 ** 10 % 7)', wrong: 'print(2 ** 10 % 5)' },
};

const SYNTHESIS_RUN = 'eval-synthetic-fixture';
const text = (content: unknown) => (typeof content === 'string' ? content : '');

/** The exact-answer sample's answers: trial 0 answers right, trial 1 wrong. */
const EXACT: Record<string, [string, string]> = {
  'capital of France': ['The capital is Paris.\nAnswer: paris.', 'Answer: Lyon'],
  'is the largest': ['Answer: Jupiter', 'Answer: Saturn'],
  'formula of water': ['Answer: H₂O', 'Answer: H2O2'],
};

function policy(request: ScriptedRequest): Reply {
  const { messages, seed = 0 } = request.body;
  const system = text(messages[0]?.content);
  if (system.startsWith('Answer the question.')) {
    const asked = text(messages[1]?.content);
    return Object.entries(EXACT).find(([key]) => asked.includes(key))![1][seed % 2]!;
  }
  const question = text(messages.find((m) => m.role === 'user')?.content);
  if (question.startsWith('Please sort out record')) return 'All sorted.'; // a synthetic task
  const last = messages[messages.length - 1]!;
  const person = /was (Marie Curie|Ada Lovelace) born/.exec(question)?.[1];
  if (last.role === 'tool') {
    const observed = text(last.content).trim();
    if (person)
      return `Final answer: ${new RegExp(`${person} .*?born in (\\w+)`).exec(observed)?.[1] ?? 'unknown'}`;
    return `The program printed ${observed}.\n\n\\boxed{${observed}}`;
  }
  if (person) return { toolCalls: [{ name: 'search', arguments: { query: `${person} born` } }] };
  const program = Object.entries(PROGRAMS).find(([key]) => question.includes(key))![1];
  return {
    toolCalls: [{ name: 'python', arguments: { code: seed % 2 === 0 ? program.right : program.wrong } }],
  };
}

describe('math and search benchmarks in an Evaluation run', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let evalWorker: EvalWorkerProcess;
  let dir: string;
  const evalQueue = `eval-${randomBytes(4).toString('hex')}`;
  const examples = path.join(REPO_ROOT, 'examples', 'evaluation');

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-eval-reasoning-'));
    db = await createTestDatabase();
    await indexCorpus(getPool(db.url), 'sample-corpus', path.join(REPO_ROOT, 'examples/search/corpus.jsonl'));
    await insertFixtureTasks(db.url, { synthesisRunId: SYNTHESIS_RUN, count: 5 });
    models = await startModelServer({ script: [{ role: 'policy', reply: policy }, ...grpoFixtureScript] });
    tw = await startTestWorker(inject('temporalAddress'), db.url);
    evalWorker = await startEvalWorker({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      MOCKWORLD_EVAL_TASK_QUEUE: evalQueue,
      DATABASE_URL: db.url,
    });
  }, 240_000);
  afterAll(async () => {
    await evalWorker?.kill();
    await tw?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const spec = (mathFile: string) => ({
    kind: 'Evaluation',
    name: 'reasoning',
    policy: { endpoint: { baseUrl: models.url, model: 'scripted-policy' } },
    sampling: { temperature: 0 },
    benchmarks: {
      math: { datasets: [{ name: 'math-sample', path: mathFile }], trials: 2 },
      search: {
        datasets: [{ name: 'search-sample', path: path.join(examples, 'search-sample.jsonl') }],
        trials: 2,
        backend: { kind: 'offline', collection: 'sample-corpus' },
        judge: { endpoint: { baseUrl: models.url, model: 'scripted-judge' } },
      },
    },
    concurrency: 2,
    evalTaskQueue: evalQueue,
    bootstrapSamples: 200,
  });
  const runId = `eval-reasoning-${Date.now()}`;

  it('runs every (problem, trial) once with the real tools, stores it, and scores Avg@k', async () => {
    const summary: EvaluationSummary = await tw.client.workflow.execute('Evaluation', {
      args: [spec(path.join(examples, 'math-sample.jsonl'))],
      taskQueue: tw.taskQueue,
      workflowId: runId,
    });
    const groups = Object.fromEntries(summary.metrics.groups.map((g) => [`${g.benchmark}/${g.group}`, g]));
    expect(groups['math/math-sample']).toMatchObject({ tasks: 3, trials: 6, k: 2, avgAtK: 0.5 });
    expect(groups['math/math-sample']!.passHatK).toMatchObject({ '1': 0.5, '2': 0 });
    expect(groups['search/search-sample']).toMatchObject({ tasks: 2, trials: 4, avgAtK: 1 });

    const trials = await query<{
      benchmark: string;
      task_id: string;
      trial: number;
      reward: number;
      detail: string;
      tool: string;
    }>(
      db.url,
      `SELECT benchmark, task_id, trial, reward, detail, trajectory->3->>'content' AS tool
         FROM eval_trials WHERE evaluation_id = $1 ORDER BY benchmark, task_id, trial`,
      [runId],
    );
    expect(trials).toHaveLength(10);
    for (const row of trials.filter((r) => r.benchmark === 'math')) {
      // The answer is what the sandbox printed: right program (trial 0) -> 1, wrong -> 0.
      expect(row.reward).toBe(row.trial === 0 ? 1 : 0);
      expect(row.detail).toMatch(/^math-verify/);
    }
    expect(trials.find((r) => r.task_id === 'curie-birthplace')!.tool).toMatch(/Warsaw/); // the offline index
    const policyCalls = models.requestCount('policy');
    expect(policyCalls).toBe(3 * 2 * 2 + 2 * 2 * 2); // two turns per trial

    // Started again under its id: every trial is returned as stored, no model call is made.
    const again: EvaluationSummary = await tw.client.workflow.execute('Evaluation', {
      args: [spec(path.join(examples, 'math-sample.jsonl'))],
      taskQueue: tw.taskQueue,
      workflowId: runId,
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    expect(again.metrics.trials).toBe(10);
    expect(models.requestCount('policy')).toBe(policyCalls);
    await recordHistory(runId, 'evaluation-math-search');

    // The report's table and chart, and every trial with its trajectory as JSON Lines.
    const env = { DATABASE_URL: db.url, MOCKWORLD_HOME: dir };
    const report = await runCli(env, 'report', runId);
    expect(report.code).toBe(0);
    expect(report.stdout).toMatch(/math\s+math-sample\s+3\s+2\s+0\.500/);
    const chart = /scores chart: (\S+\.svg)/.exec(report.stdout)![1]!;
    expect(await readFile(chart, 'utf8')).toMatch(/^<svg[\s\S]*pass\^k/);
    const exported = await runCli(env, 'export', runId, '--out', path.join(dir, 'export'));
    expect(exported.code).toBe(0);
    const lines = (await readFile(path.join(dir, 'export', 'trials.jsonl'), 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(10);
    const first = JSON.parse(lines[0]!) as { benchmark: string; trajectory: Array<{ role: string }> };
    expect(first.benchmark).toBe('math');
    expect(first.trajectory.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant']);
  });

  it('runs a registered file benchmark (exact answers) through the benchmark registry', async () => {
    const id = `${runId}-exact`;
    const summary: EvaluationSummary = await tw.client.workflow.execute('Evaluation', {
      args: [
        {
          kind: 'Evaluation',
          policy: { endpoint: { baseUrl: models.url, model: 'scripted-policy' } },
          benchmarks: {
            exact: {
              datasets: [{ name: 'exact-sample', path: path.join(examples, 'exact-sample.jsonl') }],
              trials: 2,
            },
          },
          evalTaskQueue: evalQueue,
          bootstrapSamples: 200,
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: id,
    });
    expect(summary.metrics.groups).toEqual([
      expect.objectContaining({
        benchmark: 'exact',
        group: 'exact-sample',
        tasks: 3,
        trials: 6,
        avgAtK: 0.5,
      }),
    ]);
    const trials = await query<{ task_id: string; trial: number; reward: number; detail: string }>(
      db.url,
      'SELECT task_id, trial, reward, detail FROM eval_trials WHERE evaluation_id = $1 ORDER BY task_id, trial',
      [id],
    );
    expect(trials.map((t) => [t.task_id, t.trial, t.reward])).toEqual([
      ['capital-france', 0, 1],
      ['capital-france', 1, 0],
      ['largest-planet', 0, 1],
      ['largest-planet', 1, 0],
      ['water-formula', 0, 1],
      ['water-formula', 1, 0],
    ]);
    expect(trials[0]!.detail).toBe('answer "paris" matches "paris"');
  });

  it('refuses a benchmark file with a bad line before any trial, naming the line', async () => {
    const bad = path.join(dir, 'bad.jsonl');
    await writeFile(bad, '{"question": "1+1?", "answer": "2"}\n{"question": "no answer"}\nnot json\n');
    const before = models.requestCount('policy');
    const run = tw.client.workflow.execute('Evaluation', {
      args: [spec(bad)],
      taskQueue: tw.taskQueue,
      workflowId: `${runId}-bad`,
    });
    const failure = await run.then(
      () => undefined,
      (error: Error & { cause?: Error & { cause?: Error } }) =>
        String(error.cause?.cause?.message ?? error.cause?.message),
    );
    expect(failure).toMatch(/2 bad line\(s\): line 2: answer: .*; line 3: not JSON/);
    expect(models.requestCount('policy')).toBe(before);
  });

  it('plays the held-out synthetic tasks GrpoTraining holds out, judged by their rubrics', async () => {
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    const id = `${runId}-synthetic`;
    const summary: EvaluationSummary = await tw.client.workflow.execute('Evaluation', {
      args: [
        {
          kind: 'Evaluation',
          policy: { endpoint: { baseUrl: models.url, model: 'scripted-policy' } },
          benchmarks: {
            synthetic: {
              synthesisRunId: SYNTHESIS_RUN,
              heldOutTasks: 2,
              seed: 3,
              trials: 2,
              maxTurns: 2,
              toolSimulator: role,
              userSimulator: role,
              judge: role,
            },
          },
          evalTaskQueue: evalQueue,
          bootstrapSamples: 200,
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: id,
    });
    // The same tasks a GrpoTraining run with seed 3 and heldOutTasks 2 evaluates on.
    const kept = Array.from({ length: 5 }, (_, i) => fixtureTaskId(SYNTHESIS_RUN, i));
    const heldOut = splitHeldOut(kept, 2, 3).heldOut;
    const trials = await query<{ task_id: string; reward: number; judged: number }>(
      db.url,
      `SELECT t.task_id, t.reward, j.reward AS judged
         FROM eval_trials t JOIN judgements j ON j.episode_id = $1 || '/synthetic/held-out/' || t.task_id || '/t' || t.trial
        WHERE t.evaluation_id = $1 ORDER BY t.task_id, t.trial`,
      [id],
    );
    expect(new Set(trials.map((t) => t.task_id))).toEqual(new Set(heldOut));
    expect(trials).toHaveLength(4);
    for (const t of trials) expect(t.reward).toBe(t.judged); // the rubric judge's R(tau), as stored
    const group = summary.metrics.groups.find((g) => g.benchmark === 'synthetic')!;
    const mean = trials.reduce((sum, t) => sum + t.reward, 0) / trials.length;
    expect(group).toMatchObject({ group: 'held-out', tasks: 2, trials: 4, k: 2 });
    expect(group.avgAtK).toBeCloseTo(mean, 10);
    // The rubric judge's controls on the 2 tasks (honest fixture judge): all passed, not marked.
    expect(summary.judge).toEqual({ controlPassRate: 1, minPassRate: 0.9, unreliable: false, reason: null });
    const report = await runCli({ DATABASE_URL: db.url }, 'report', id);
    expect(report.stdout).toContain('judge controls: 100% passed (at least 90% needed)');
    await recordHistory(`${id}/synthetic/held-out`, 'evaluation-group-synthetic');
  });
});
