import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { indexCorpus } from '../../activities/search/index.js';
import { getPool } from '../../activities/store/db.js';
import { REPO_ROOT } from '../../deploy/paths.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import {
  fixturePolicy,
  grpoFixtureScript,
  insertFixtureProblems,
  insertFixtureTasks,
  type FixtureProblem,
} from '../../testkit/grpo-fixture.js';
import {
  startModelServer,
  type ModelServer,
  type Reply,
  type ScriptedRequest,
} from '../../testkit/model-server.js';
import { startPython, type PythonProcess } from '../../testkit/python-process.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';
import { recordHistory } from '../../testkit/vitest/histories.js';

/**
 * Seed 000 §3.4: tool-use tasks in the mock world and reasoning problems in a real Python
 * environment, in one GRPO run. The scripted policy computes each math answer with the `python`
 * tool and writes back what the program printed: even samples run the right program, odd ones a
 * wrong one, so only real Python in the sandbox can make the even samples' answers right.
 */
const SYNTHESIS_RUN = 'mix-synthesis';
const COLLECTION = 'mix-corpus';
const PROBLEMS: readonly FixtureProblem[] = [
  {
    kind: 'math',
    scenario: 'A carpenter cuts 23 boards for each of her 17 customers. How many boards does she cut?',
    answer: '391',
  },
  {
    kind: 'math',
    scenario: 'A runner adds 1 km a day, from 1 km on day 1 to 50 km on day 50. How far does she run in all?',
    answer: '1275',
  },
  {
    kind: 'search',
    scenario: 'My grandmother admired Marie Curie. In which city was Marie Curie born?',
    answer: 'Warsaw',
  },
];
const PROGRAMS: Record<string, { right: string; wrong: string }> = {
  '391': { right: 'print(23 * 17)', wrong: 'print(23 * 16)' },
  '1275': { right: 'print(sum(range(1, 51)))', wrong: 'print(sum(range(1, 50)))' },
};

const text = (content: unknown) => (typeof content === 'string' ? content : '');

/** The scripted policy: tool-use tasks answered at once, reasoning problems through their tools. */
function policy(request: ScriptedRequest): Reply {
  const { messages, seed = 0 } = request.body;
  const opening = text(messages.find((m) => m.role === 'user')?.content);
  const problem = PROBLEMS.find((p) => opening.includes(p.scenario));
  if (!problem) return 'All sorted.'; // a tool-use task of the mock world
  const last = messages[messages.length - 1]!;
  if (last.role === 'tool') {
    const observed = text(last.content).trim();
    if (problem.kind === 'search') return `Final answer: ${/born in (\w+)/.exec(observed)?.[1] ?? 'unknown'}`;
    return `The program printed ${observed}.\n\n\\boxed{${observed}}`;
  }
  if (problem.kind === 'search')
    return { toolCalls: [{ name: 'search', arguments: { query: 'Marie Curie born' } }] };
  const program = PROGRAMS[problem.answer]!;
  return {
    toolCalls: [{ name: 'python', arguments: { code: seed % 2 === 0 ? program.right : program.wrong } }],
  };
}

describe('GRPO on a mix of tool-use tasks and reasoning problems (seed §3.4)', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let dir: string;
  let trainer: PythonProcess;
  let problemIds: string[];
  const runId = `grpo-mix-${Date.now()}`;
  const gpuQueue = `gpu-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-grpo-mix-'));
    db = await createTestDatabase();
    await insertFixtureTasks(db.url, { synthesisRunId: SYNTHESIS_RUN, count: 2 });
    problemIds = await insertFixtureProblems(db.url, SYNTHESIS_RUN, PROBLEMS);
    await indexCorpus(getPool(db.url), COLLECTION, path.join(REPO_ROOT, 'examples/search/corpus.jsonl'));
    models = await startModelServer({ script: [{ role: 'policy', reply: policy }, ...grpoFixtureScript] });
    trainer = startPython(
      'mockworld_trainer.worker',
      [],
      {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        MOCKWORLD_GPU_TASK_QUEUE: gpuQueue,
        MOCKWORLD_CHECKPOINT_DIR: path.join(dir, 'checkpoints'),
        MOCKWORLD_TRAINER_DEVICE: 'cpu',
        DATABASE_URL: db.url,
      },
      /trainer worker:/,
    );
    await trainer.ready;
    tw = await startTestWorker(inject('temporalAddress'), db.url);
  });
  afterAll(async () => {
    await tw?.close();
    await trainer?.kill();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const spec = (reasoning: Record<string, unknown>) => ({
    dataset: { synthesisRunId: SYNTHESIS_RUN, heldOutTasks: 0, reasoning },
    policy: fixturePolicy({ baseUrl: models.url, model: 'scripted' }, 0),
    judge: { endpoint: { baseUrl: models.url, model: 'scripted' } },
    toolSimulator: { endpoint: { baseUrl: models.url, model: 'scripted' } },
    userSimulator: { endpoint: { baseUrl: models.url, model: 'scripted' } },
    globalBatch: 5,
    miniBatch: 5,
    rolloutsPerTask: 2,
    maxTurns: 3,
    learningRate: 1e-3,
    epochs: 2,
    gpuTaskQueue: gpuQueue,
  });

  it('trains 2 iterations: sandboxed python right -> 1, wrong -> 0, search by the real index, metrics per kind', async () => {
    const summary = await tw.client.workflow.execute('GrpoTraining', {
      args: [spec({ search: { kind: 'offline', collection: COLLECTION } })],
      taskQueue: tw.taskQueue,
      workflowId: runId,
    });
    expect(summary).toMatchObject({ iterations: 2, policyStep: 2, stopped: false });

    // Every reasoning rollout has its correctness reward, under its episode id.
    const rewards = await query<{
      task_id: string;
      sample_index: number;
      reward: number;
      extracted_answer: string;
      method: string;
      tool: string;
    }>(
      db.url,
      `SELECT e.task_id, e.sample_index, c.reward, c.extracted_answer, c.method, e.messages->3->>'content' AS tool
         FROM episodes e JOIN correctness_rewards c ON c.reward_id = e.episode_id
        WHERE starts_with(e.episode_id, $1) ORDER BY e.episode_id`,
      [`${runId}/`],
    );
    expect(rewards).toHaveLength(2 * 3 * 2); // iterations x problems x samples
    for (const row of rewards) {
      const problem = PROBLEMS[problemIds.indexOf(row.task_id)]!;
      if (problem.kind === 'search') {
        expect(row).toMatchObject({ reward: 1, extracted_answer: 'Warsaw', method: 'exact-match' });
        expect(row.tool).toMatch(/Marie Curie/); // the offline index's snippet
        continue;
      }
      // What the sandbox printed is the answer: right program -> gold, wrong program -> not.
      const right = row.sample_index % 2 === 0;
      expect(row.tool.trim()).toEqual(
        right ? problem.answer : expect.not.stringMatching(`^${problem.answer}$`),
      );
      expect(row).toMatchObject({
        reward: right ? 1 : 0,
        extracted_answer: row.tool.trim(),
        method: 'math-verify',
      });
    }

    // Per-kind metrics of each iteration: math half right, search all right, tool-use judged.
    const metrics = await query<{
      iteration: number;
      metrics: {
        byKind: Record<string, { episodes: number; rewarded: number; rewardMean: number }>;
        judged: number;
      };
    }>(db.url, 'SELECT iteration, metrics FROM training_metrics WHERE run_id = $1 ORDER BY iteration', [
      runId,
    ]);
    expect(metrics.map((m) => m.iteration)).toEqual([0, 1]);
    for (const { metrics: m } of metrics) {
      expect(m.byKind).toMatchObject({
        math: { episodes: 4, rewarded: 4, rewardMean: 0.5 },
        search: { episodes: 2, rewarded: 2, rewardMean: 1 },
        'tool-use': { episodes: 4, rewarded: 4, rewardMean: expect.any(Number) },
      });
      expect(m.judged).toBe(10);
    }

    // The trainer's batch holds the reasoning rollouts with the tools they were offered.
    const batch = await query<{ group_id: string; reward: number; tools: string[] }>(
      db.url,
      `SELECT payload->>'group_id' AS group_id, (payload->>'reward')::float8 AS reward,
              ARRAY(SELECT t->'function'->>'name' FROM jsonb_array_elements(payload->'tools') t) AS tools
         FROM trainer_batches WHERE run_id = $1 AND step = 1`,
      [runId],
    );
    expect(batch).toHaveLength(10);
    const toolsOf = (id: string) => batch.find((row) => row.group_id === id)!.tools;
    expect(toolsOf(problemIds[0]!)).toEqual(['python']);
    expect(toolsOf(problemIds[2]!)).toEqual(['search', 'python']);
    expect(
      batch
        .filter((row) => row.group_id === problemIds[0])
        .map((row) => row.reward)
        .sort(),
    ).toEqual([0, 1]);
    await recordHistory(runId, 'grpo-training-reasoning-mix');
    await recordHistory(`${runId}-it1-${problemIds[0]}`, 'grpo-group-reasoning');
  });

  it('refuses a mix with search problems and no search backend, naming the field', async () => {
    const run = tw.client.workflow.execute('GrpoTraining', {
      args: [spec({})],
      taskQueue: tw.taskQueue,
      workflowId: `${runId}-no-search`,
    });
    await expect(run).rejects.toThrow();
    const failure = await run.catch((error: Error & { cause?: { cause?: Error } }) => error);
    expect(String(failure.cause?.cause?.message ?? failure.cause?.message)).toMatch(
      /dataset\.reasoning\.search/,
    );
  });
});
