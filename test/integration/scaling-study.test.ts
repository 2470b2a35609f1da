import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { cellStatesQuery } from '../../workflows/study-controls.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer, type ScriptedRequest } from '../../testkit/model-server.js';
import { recordHistory } from '../../testkit/vitest/histories.js';
import { startPython, type PythonProcess } from '../../testkit/python-process.js';
import { eventually } from '../../testkit/temporal.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';

/** Seed pool (8 questions, 2 domains) and test set (4); numeric and multiple-choice answers. */
const SEEDS = [
  { id: 'm1', domain: 'mathematics', question: 'What is 17 + 26?', answer: '43' },
  { id: 'm2', domain: 'mathematics', question: 'What is 144 / 12?', answer: '12' },
  { id: 'm3', domain: 'mathematics', question: 'Solve 3x + 4 = 19.', answer: '5' },
  {
    id: 'm4',
    domain: 'mathematics',
    question: 'Which is divisible by 9?',
    answer: 'B',
    options: ['124', '153', '211'],
  },
  { id: 'p1', domain: 'physics', question: 'F = 12 N on 4 kg: a in m/s^2?', answer: '3' },
  { id: 'p2', domain: 'physics', question: '6 V across 2 A: R in ohms?', answer: '3' },
  {
    id: 'p3',
    domain: 'physics',
    question: 'SI unit of force?',
    answer: 'A',
    options: ['newton', 'joule', 'watt'],
  },
  { id: 'p4', domain: 'physics', question: '50 Hz and 2 m: speed in m/s?', answer: '100' },
];
const TESTS = [
  { id: 't1', domain: 'mathematics', question: 'What is 9 times 8?', answer: '72' },
  { id: 't2', domain: 'mathematics', question: 'What is 25% of 200?', answer: '50' },
  { id: 't3', domain: 'physics', question: '5 kg at 2 m/s^2: F in N?', answer: '10' },
  { id: 't4', domain: 'physics', question: 'SI unit of energy?', answer: 'B', options: ['watt', 'joule'] },
];
const TEACHER_SEED = 1000;

/**
 * The teacher answers attempt n (its sampling seed is TEACHER_SEED + n) correctly unless
 * n % 3 == 1, so every question needs 3 attempts for 2 accepted; the judge is only asked about
 * responses the exact-match path cannot decide (the tiny student's) and says INCORRECT.
 */
function script(request: ScriptedRequest): string {
  if (request.role === 'study-judge') return 'INCORRECT';
  const prompt = request.body.messages
    .map((m) => (typeof m.content === 'string' ? m.content : ''))
    .join('\n');
  const question = SEEDS.find((q) => prompt.includes(q.question));
  if (!question) throw new Error(`unexpected request: ${prompt.slice(0, 200)}`);
  const attempt = (request.body.seed ?? TEACHER_SEED) - TEACHER_SEED;
  const answer = attempt % 3 === 1 ? 'not-the-answer' : question.answer;
  return `Working it out step by step for attempt ${attempt}.\nThe final answer is \\boxed{${answer}}.`;
}

const jsonl = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

describe('a tiny scaling study (2 protocols x 2 budgets x 1 seed)', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let dir: string;
  let connection: Connection;
  let worker: WorkerProcess | undefined;
  let trainer: PythonProcess;
  let policy: PythonProcess;
  let env: Record<string, string>;
  const taskQueue = `study-${randomBytes(4).toString('hex')}`;
  const gpuQueue = `gpu-${randomBytes(4).toString('hex')}`;
  const studyId = `study-e2e-${Date.now()}`;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-study-'));
    await writeFile(path.join(dir, 'seeds.jsonl'), jsonl(SEEDS));
    await writeFile(path.join(dir, 'test.jsonl'), jsonl(TESTS));
    db = await createTestDatabase();
    models = await startModelServer({ script });
    connection = await Connection.connect({ address: inject('temporalAddress') });
    env = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DATABASE_URL: db.url,
      MOCKWORLD_TASK_QUEUE: taskQueue,
      MOCKWORLD_GPU_TASK_QUEUE: gpuQueue,
      MOCKWORLD_HOME: dir,
      MOCKWORLD_CHECKPOINT_DIR: path.join(dir, 'checkpoints'),
      MOCKWORLD_TRAINER_DEVICE: 'cpu',
    };
    trainer = startPython('mockworld_trainer.worker', [], env, /trainer worker:/);
    policy = startPython(
      'mockworld_trainer.policy_server',
      ['--any-run', '--port', '0', '--base', 'tiny', '--default-max-tokens', '16'],
      env,
      /policy server/,
    );
    await Promise.all([trainer.ready, policy.ready]);
    worker = startWorkerProcess(env);
  });
  afterAll(async () => {
    await worker?.kill();
    await trainer?.kill();
    await policy?.kill();
    await connection?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it(
    'trains and evaluates every cell once, survives a killed worker mid-grid, and writes the report',
    { timeout: 400_000 },
    async () => {
      const policyUrl = /(http:\/\/\S+\/v1)/.exec(await policy.ready)![1]!;
      const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
      const client = new Client({ connection });
      const spec = {
        questions: { seedPool: path.join(dir, 'seeds.jsonl'), testSet: path.join(dir, 'test.jsonl') },
        teacher: { ...role, sampling: { temperature: 1.2, maxTokens: 64, seed: TEACHER_SEED } },
        judge: { ...role, sampling: { temperature: 0, maxTokens: 4 } },
        student: { base: { kind: 'tiny', seed: 0 }, endpoint: { baseUrl: policyUrl, model: 'policy' } },
        rejectionSampling: { acceptedPerQuestion: 2, maxAttemptsPerQuestion: 6, attemptsPerWave: 3 },
        budgets: [1, 2],
        trainingSeeds: 1,
        protocols: ['rs', 'judge-free'],
        sft: { epochs: 2, globalBatch: 4, learningRate: 1e-3, minLearningRate: 1e-4 },
        evaluation: { samples: 2, sampling: { temperature: 0.7, maxTokens: 8, seed: 5 } },
        concurrency: 2,
        gpuTaskQueue: gpuQueue,
      };
      const handle = await client.workflow.start('ScalingStudy', {
        args: [spec],
        taskQueue,
        workflowId: studyId,
      });

      // Kill the CPU worker once the first cell is evaluated and others are in flight.
      await eventually(async () => {
        const rows = await query(
          db.url,
          'SELECT count(*)::int AS n FROM study_cells WHERE finished_at IS NOT NULL',
        );
        return (rows[0]!.n as number) >= 1;
      }, 150_000);
      await worker!.kill();
      worker = startWorkerProcess(env);

      const summary = await handle.result();
      expect(summary).toMatchObject({ cells: 4, failed: 0 });
      expect(await handle.query(cellStatesQuery)).toEqual({
        'rs-q4-r1-s0': 'done',
        'rs-q4-r2-s0': 'done',
        'judge-free-q4-r1-s0': 'done',
        'judge-free-q4-r2-s0': 'done',
      });

      // Sampling: 3 attempts per question (attempt 1 is wrong), 2 accepted, nothing sampled twice.
      const attempts = await query(
        db.url,
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE correct)::int AS ok, count(DISTINCT (question_id, attempt))::int AS d
         FROM study_attempts WHERE stream = 'rs'`,
      );
      expect(attempts[0]).toEqual({ n: 8 * 3, ok: 8 * 2, d: 8 * 3 });
      const teacherCalls = await query(
        db.url,
        `SELECT count(*)::int AS n FROM llm_calls WHERE role = 'teacher'`,
      );
      expect(teacherCalls[0]!.n).toBe(8 * 3);

      // The prefix rule: RS at r admits the first r correct; judge-free the first r attempts.
      const cells = await query(
        db.url,
        `SELECT cell_id, examples, steps, score, evaluated, train_metrics->>'steps' AS trained FROM study_cells ORDER BY cell_id`,
      );
      const byId = Object.fromEntries(cells.map((c) => [c.cell_id, c]));
      expect(byId['rs-q4-r1-s0']).toMatchObject({ examples: 8, steps: 2 * 2 });
      expect(byId['rs-q4-r2-s0']).toMatchObject({ examples: 16, steps: 2 * 4 });
      expect(byId['judge-free-q4-r1-s0']).toMatchObject({ examples: 8, steps: 2 * 2 });
      expect(byId['judge-free-q4-r2-s0']).toMatchObject({ examples: 16, steps: 2 * 4 });
      const wrongAdmitted = await query(
        db.url,
        `SELECT cell_id, count(*) FILTER (WHERE NOT correct)::int AS wrong FROM study_cell_examples GROUP BY 1 ORDER BY 1`,
      );
      expect(Object.fromEntries(wrongAdmitted.map((r) => [r.cell_id, r.wrong]))).toEqual({
        'judge-free-q4-r1-s0': 0,
        'judge-free-q4-r2-s0': 8,
        'rs-q4-r1-s0': 0,
        'rs-q4-r2-s0': 0,
      });

      // Every cell trained exactly its steps once (the trainer's per-step records) and evaluated once.
      for (const cell of cells) {
        const run = path.join(dir, 'checkpoints', `${studyId}-cell-${cell.cell_id}`);
        const steps = (await readdir(run)).filter((name) => name.startsWith('step-'));
        expect(steps).toHaveLength(cell.steps as number);
        expect(Number(cell.trained)).toBe(cell.steps);
        expect(cell.evaluated).toBe(TESTS.length * 2);
        expect(cell.score).toBeGreaterThanOrEqual(0);
      }
      const evaluations = await query(db.url, `SELECT count(*)::int AS n FROM study_evaluations`);
      expect(evaluations[0]!.n).toBe(4 * TESTS.length * 2);
      const studentCalls = await query(
        db.url,
        `SELECT count(*)::int AS n FROM llm_calls WHERE role = 'student'`,
      );
      expect(studentCalls[0]!.n).toBe(4 * TESTS.length * 2);

      // The report: tables for both protocols and one SVG per curve.
      const report = await readFile(path.join(dir, 'studies', studyId, 'report.md'), 'utf8');
      expect(report).toContain('rs');
      expect(report).toContain('judge-free');
      const svgs = (await readdir(path.join(dir, 'studies', studyId))).filter((f) => f.endsWith('.svg'));
      expect(svgs.length).toBeGreaterThanOrEqual(2);

      await recordHistory(studyId, 'scaling-study');
      await recordHistory(`${studyId}-sample-rs`, 'study-sampling');
      await recordHistory(`${studyId}-cell-rs-q4-r2-s0`, 'study-cell');

      // Re-running the study trains nothing again: every cell is already done.
      const again = await client.workflow.execute('ScalingStudy', {
        args: [spec],
        taskQueue,
        workflowId: studyId,
      });
      expect(again).toMatchObject({ cells: 4, trained: 0, alreadyDone: 4 });
    },
  );
});
