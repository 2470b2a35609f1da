/**
 * Judge controls and the deterministic checker of a scaling study (issue 36), activity by
 * activity against a fresh database and the scripted model server: a judge that accepts
 * everything is found out by its controls and the report says so; an honest one is not; numeric
 * and multiple-choice answers never reach the judge.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { statusQuery } from '../../workflows/controls.js';
import { eventually } from '../../testkit/temporal.js';
import { recordHistory } from '../../testkit/vitest/histories.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';
import { queryRolesAnsweredBy } from '../../activities/llm/call-store.js';
import { createModelClient, type ModelClient } from '../../activities/llm/index.js';
import { getPool } from '../../activities/store/db.js';
import { studyCells, studyStreams } from '../../activities/study/grid.js';
import { createStudyActivities } from '../../activities/study/index.js';
import { ScalingStudySpecSchema, type ScalingStudySpec } from '../../schemas/scaling-study-spec.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer, type ScriptedRequest } from '../../testkit/model-server.js';

/** Free-text golds (the judge decides) and a numeric and a multiple-choice one (the checker does). */
const SEEDS = [
  { id: 'capital', domain: 'geography', question: 'What is the capital of France?', answer: 'Paris' },
  { id: 'planet', domain: 'astronomy', question: 'Which planet is the largest?', answer: 'Jupiter' },
  { id: 'sum', domain: 'mathematics', question: 'What is 17 + 26?', answer: '43' },
];
const TESTS = [
  { id: 'gold', domain: 'chemistry', question: 'What is the chemical symbol for gold?', answer: 'Au' },
  { id: 'times', domain: 'mathematics', question: 'What is 9 times 8?', answer: '72' },
  {
    id: 'prime',
    domain: 'mathematics',
    question: 'Which number is prime?',
    answer: 'B',
    options: ['21', '29', '33'],
  },
];
const ALL = [...SEEDS, ...TESTS];

const between = (text: string, start: string, end: string) =>
  text.slice(text.indexOf(start) + start.length, text.indexOf(end)).trim();

let judgeMode: 'always-correct' | 'honest' = 'honest';

/**
 * The teacher answers free-text questions in words the checker cannot match ("the answer is
 * Paris, I think") and numbers exactly; the student writes noise. The honest judge says CORRECT
 * when the predicted answer names the gold target; the other says CORRECT to everything.
 */
function script(request: ScriptedRequest): string {
  const prompt = request.body.messages
    .map((m) => (typeof m.content === 'string' ? m.content : ''))
    .join('\n');
  if (request.role === 'study-judge') {
    if (judgeMode === 'always-correct') return 'CORRECT';
    const gold = between(prompt, '<Gold Target Begin>:', '<Gold Target End>').toLowerCase();
    const predicted = between(prompt, '<Predicted Answer Begin>:', '<Predicted End>').toLowerCase();
    return predicted.includes(gold) ? 'CORRECT' : 'INCORRECT';
  }
  const question = ALL.find((q) => prompt.includes(q.question));
  if (!question) throw new Error(`unexpected request: ${prompt.slice(0, 200)}`);
  if (request.role === 'student') return 'zq vex lorp'; // a model that cannot answer
  return /^\d+$/.test(question.answer)
    ? `Adding up: \\boxed{${question.answer}}`
    : `\\boxed{I believe it is ${question.answer}}`;
}

const jsonl = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

describe('judge controls and the deterministic checker', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;
  let pool: pg.Pool;
  let dir: string;
  let study: ReturnType<typeof createStudyActivities>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-judge-controls-'));
    process.env.MOCKWORLD_HOME = dir; // the report directory
    await writeFile(path.join(dir, 'seeds.jsonl'), jsonl(SEEDS));
    await writeFile(path.join(dir, 'test.jsonl'), jsonl(TESTS));
    [db, server] = await Promise.all([createTestDatabase('mw_judge_controls'), startModelServer({ script })]);
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 5, maxDelayMs: 20 } });
    pool = getPool(db.url);
    study = createStudyActivities(db.url, models);
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * Records a study run as the workflow would, prepares its questions, samples and evaluates its
   * one cell. The model name is the study id: the ledger caches calls by endpoint and model, and
   * each study must ask its own judge.
   */
  async function runStudy(studyId: string): Promise<ScalingStudySpec> {
    const endpoint = { baseUrl: server.url, model: studyId };
    const spec = ScalingStudySpecSchema.parse({
      kind: 'ScalingStudy',
      questions: { seedPool: path.join(dir, 'seeds.jsonl'), testSet: path.join(dir, 'test.jsonl') },
      teacher: { endpoint, sampling: { temperature: 1.2, maxTokens: 64, seed: 1 } },
      judge: { endpoint, sampling: { temperature: 0, maxTokens: 4 } },
      student: { base: { kind: 'tiny', seed: 0 }, endpoint },
      rejectionSampling: { acceptedPerQuestion: 1, maxAttemptsPerQuestion: 2, attemptsPerWave: 1 },
      budgets: [1],
      protocols: ['rs'],
      evaluation: { samples: 2, sampling: { temperature: 0.7, maxTokens: 8, seed: 3 } },
    });
    await pool.query(`INSERT INTO runs (run_id, kind, spec) VALUES ($1, 'ScalingStudy', $2)`, [
      studyId,
      spec,
    ]);
    await study.prepareStudy({ studyId, seedPool: spec.questions.seedPool, testSet: spec.questions.testSet });
    const rs = studyStreams(spec).find((s) => s.name === 'rs')!;
    for (const seed of SEEDS)
      await study.sampleQuestion({
        studyId,
        stream: rs,
        questionId: seed.id,
        teacher: spec.teacher,
        judge: spec.judge,
        accepted: 1,
        maxAttempts: 2,
        attemptsPerWave: 1,
        seed: spec.seed,
      });
    const [cell] = studyCells(spec);
    await study.startCell({ studyId, cell: cell! });
    await study.evaluateCell({
      studyId,
      cellId: cell!.cellId,
      trainerRunId: `${studyId}-cell`,
      policyStep: 0,
      student: spec.student.endpoint,
      sampling: spec.evaluation.sampling,
      samples: spec.evaluation.samples,
      judge: spec.judge,
    });
    return spec;
  }

  it('decides numeric and multiple-choice answers without the judge, naming the checker per item', async () => {
    judgeMode = 'honest';
    const before = server.requestCount('study-judge');
    await runStudy('controls-checker');
    const { rows } = await pool.query<{ question_id: string; judged_by: string; correct: boolean }>(
      `SELECT question_id, judged_by, correct FROM study_evaluations WHERE study_id = 'controls-checker'
        ORDER BY question_id, sample`,
    );
    // The student's noise to a numeric or multiple-choice question is wrong by the checker alone.
    expect(rows.filter((r) => r.question_id !== 'test:gold')).toEqual(
      ['test:prime', 'test:prime', 'test:times', 'test:times'].map((q) => ({
        question_id: q,
        judged_by: 'exact',
        correct: false,
      })),
    );
    const { rows: attempts } = await pool.query<{ question_id: string; judged_by: string }>(
      `SELECT question_id, judged_by FROM study_attempts WHERE study_id = 'controls-checker' AND question_id = 'sum'`,
    );
    expect(attempts).toEqual([{ question_id: 'sum', judged_by: 'exact' }]);
    // Judge calls: one per distinct free-text answer (capital, planet, and the student's noise to
    // gold: both samples wrote the same, and the ledger answers the second), and two controls for
    // each of those three questions; none for sum, times or prime.
    expect(server.requestCount('study-judge') - before).toBe(3 + 3 * 2);
    const { rows: controlled } = await pool.query<{ question_id: string }>(
      `SELECT DISTINCT question_id FROM study_judge_controls WHERE study_id = 'controls-checker' ORDER BY 1`,
    );
    expect(controlled.map((r) => r.question_id)).toEqual(['capital', 'planet', 'test:gold']);
    // Which roles a model answered (the report's toy label asks this of the embedded model's name).
    expect(await queryRolesAnsweredBy(pool, 'controls-checker', 'controls-checker')).toEqual([
      'study-judge',
      'teacher',
    ]);
    expect(await queryRolesAnsweredBy(pool, 'controls-checker', 'smollm2-135m-instruct')).toEqual([]);
  });

  it('marks the study judge unreliable when its judge accepts everything, and says so in the report', async () => {
    judgeMode = 'always-correct';
    await runStudy('controls-lenient');
    const standing = await study.checkStudyJudge({ studyId: 'controls-lenient' });
    expect(standing).toMatchObject({
      controls: 6,
      controlsPassed: 3,
      controlPassRate: 0.5,
      unreliable: true,
    });
    expect(standing.reason).toMatch(
      /^judge unreliable: it graded 3 of 6 control answers right \(50%, below 90%\)/,
    );
    // Controls never enter a score: the lenient judge's verdicts on the wrong controls are not in mean@k.
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM study_evaluations WHERE study_id = 'controls-lenient'`,
    );
    expect(rows[0]!.n).toBe(TESTS.length * 2);

    const written = await study.writeStudyReport({ studyId: 'controls-lenient' });
    expect(written.standing.unreliable).toBe(true);
    expect(written.summary.judge).toBe(
      'UNRELIABLE: 3 of 6 controls passed (50%; threshold 90%); verdicts by checker 5, by judge 4, judge failed 0',
    );
    const report = await readFile(written.reportPath, 'utf8');
    expect(report).toContain('**judge unreliable: it graded 3 of 6 control answers right');
    expect(report).toContain('Judge controls: 3 of 6 passed (50%; threshold 90%)');
    expect(report).toContain('student: a tiny randomly initialized model (toy)');
    expect(report).toMatch(/\| rs-q4-r1-s0 \|.*\| 4 \/ 2 \| 1\/2 \|/);
  });

  it('does not mark a study whose judge grades its controls right', async () => {
    judgeMode = 'honest';
    await runStudy('controls-honest');
    const standing = await study.checkStudyJudge({ studyId: 'controls-honest' });
    expect(standing).toMatchObject({ controls: 6, controlsPassed: 6, unreliable: false, reason: null });
    const written = await study.writeStudyReport({ studyId: 'controls-honest' });
    const report = await readFile(written.reportPath, 'utf8');
    expect(report).not.toContain('judge unreliable');
    expect(report).toContain('Judge controls: 6 of 6 passed (100%; threshold 90%)');
  });

  it(
    'pauses a study whose judge fails its controls when the spec says so, naming why',
    { timeout: 180_000 },
    async () => {
      judgeMode = 'always-correct';
      const taskQueue = `judge-pause-${randomBytes(4).toString('hex')}`;
      const studyId = `controls-pause-${randomBytes(4).toString('hex')}`;
      const worker: WorkerProcess = startWorkerProcess({
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        DATABASE_URL: db.url,
        MOCKWORLD_TASK_QUEUE: taskQueue,
        MOCKWORLD_HOME: dir,
      });
      const connection = await Connection.connect({ address: inject('temporalAddress') });
      try {
        const endpoint = { baseUrl: server.url, model: studyId };
        const handle = await new Client({ connection }).workflow.start('ScalingStudy', {
          taskQueue,
          workflowId: studyId,
          args: [
            {
              kind: 'ScalingStudy',
              questions: { seedPool: path.join(dir, 'seeds.jsonl'), testSet: path.join(dir, 'test.jsonl') },
              teacher: { endpoint, sampling: { temperature: 1.2, maxTokens: 64, seed: 1 } },
              judge: { endpoint, sampling: { temperature: 0, maxTokens: 4 } },
              judgeControls: { onUnreliable: 'pause' },
              student: { base: { kind: 'tiny', seed: 0 }, endpoint },
              rejectionSampling: { acceptedPerQuestion: 1, maxAttemptsPerQuestion: 2, attemptsPerWave: 1 },
              budgets: [1],
              protocols: ['rs'],
            },
          ],
        });
        // Sampled, then paused before its first cell: no trainer is needed to see it.
        const status = await eventually(async () => {
          const s = await handle.query(statusQuery);
          return s.state === 'paused' ? s : undefined;
        }, 120_000);
        expect(status.stage).toMatch(
          /^judge unreliable: it graded 2 of 4 control answers right \(50%, below 90%\)/,
        );
        expect(status.stage).toMatch(/resume to go on regardless$/);
        // The reason is recorded by an activity just after the pause: the run's row has it soon.
        const recorded = await eventually(async () => {
          const { rows } = await pool.query<{ pause_reason: string | null; cells: number }>(
            `SELECT pause_reason, (SELECT count(*)::int FROM study_cells WHERE study_id = $1) AS cells
             FROM runs WHERE run_id = $1`,
            [studyId],
          );
          return rows[0]?.pause_reason ? rows[0] : undefined;
        }, 30_000);
        expect(recorded).toEqual({ pause_reason: status.stage, cells: 0 });
        // The Temporal UI's details say it too, with the toy student.
        const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
        expect(metadata.currentDetails).toContain(`Paused: ${status.stage}`);
        expect(metadata.currentDetails).toContain(
          '⚠ Toy figures. student: a tiny randomly initialized model',
        );
        await handle.cancel();
        await expect(handle.result()).rejects.toThrow();
        await recordHistory(studyId, 'scaling-study-judge-paused');
      } finally {
        await connection.close();
        await worker.kill();
      }
    },
  );
});
