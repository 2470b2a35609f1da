import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { normalizeAnswer } from '../../activities/correctness/normalize.js';
import { exportRunFormats } from '../../activities/export/index.js';
import { verifyMath } from '../../activities/correctness/math-verify.js';
import { locateSandbox } from '../../activities/sandbox/index.js';
import { REPO_ROOT } from '../../deploy/paths.js';
import { pauseSignal, resumeSignal, statusQuery } from '../../workflows/controls.js';
import { taskStageQuery } from '../../workflows/synthesis-controls.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { isReasoningRequest, REASONING_PLANS, reasoningScript } from '../../testkit/reasoning-script.js';
import { scriptedOutcome, scriptedPersonas, synthesisScript } from '../../testkit/synthesis-script.js';
import { recordHistory } from '../../testkit/vitest/histories.js';
import { eventually, startTestWorker, type TestWorker } from '../../testkit/temporal.js';

/** The shipped seed file, in file order, and what the scripted teacher makes of each problem. */
const SEEDS_FILE = path.join(REPO_ROOT, 'examples', 'reasoning', 'seeds.jsonl');

/** A problem of the mixed run whose rewrite comes back empty. */
const EMPTY_REWRITE = 'What is 6 times 7?';

/** A problem whose first solve call the model boundary refuses (400): its activity fails for good. */
const REFUSED_SOLVE = 'What is 9 plus 10?';

describe('reasoning problems as a synthesis source, on the real stack', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let dir: string;
  let sql: pg.Client;
  let seeds: { question: string; answer?: string; kind: 'math' | 'search' }[];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-reasoning-'));
    process.env.MOCKWORLD_HOME = dir;
    seeds = (await readFile(SEEDS_FILE, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    db = await createTestDatabase();
    // Reasoning prompts go to the reasoning script, the rest (the mixed run's tool-use tasks) to
    // the synthesis script.
    const reasoning = reasoningScript({
      [EMPTY_REWRITE]: { responses: ['\\boxed{42}'], expected: 'rewrite_failed', emptyRewrite: true },
      [REFUSED_SOLVE]: { responses: ['\\boxed{19}'], expected: 'kept' },
    });
    models = await startModelServer({
      script: (request) => {
        if (!isReasoningRequest(request)) return synthesisScript(request);
        const prompt = String(request.body.messages.at(-1)?.content);
        // Queued for the next teacher request: with one problem at a time, this problem's first solve.
        if (prompt.startsWith('Rewrite the problem below') && prompt.includes(REFUSED_SOLVE))
          models.injectFaults({ kind: 'bad-request', role: 'teacher' });
        return reasoning(request);
      },
      latencyMs: 20,
    });
    tw = await startTestWorker(inject('temporalAddress'), db.url);
    sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
  });
  afterAll(async () => {
    await sql?.end();
    await tw?.close();
    await models?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the problems whose 3 solutions agree, drops the rest with their reasons, pauses, and exports', async () => {
    const expected = seeds.map((seed) => REASONING_PLANS[seed.question]!.expected);
    const keptIdx = expected.flatMap((outcome, i) => (outcome === 'kept' ? [i] : []));
    const reasons: Record<string, number> = {};
    for (const outcome of expected) if (outcome !== 'kept') reasons[outcome] = (reasons[outcome] ?? 0) + 1;

    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    const handle = await tw.client.workflow.start('Synthesis', {
      args: [
        {
          kind: 'Synthesis',
          name: 'reasoning-e2e',
          personas: { path: 'personas.jsonl' }, // the shipped personas (examples/ on the worker)
          tasks: 0,
          reasoning: { seeds: { path: 'reasoning/seeds.jsonl' }, problems: 50 },
          concurrency: 2,
          tasksPerWorkflowRun: 4, // 11 problems: the run continues as new twice
          models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: `reasoning-e2e-${Date.now()}`,
    });

    // Pause once a problem is decided: no problem is decided while paused once in-flight ones end.
    const decided = async () =>
      (
        await sql.query(
          `SELECT count(*)::int AS n FROM reasoning_problems WHERE run_id = $1 AND outcome <> 'pending'`,
          [handle.workflowId],
        )
      ).rows[0].n as number;
    await eventually(async () => (await decided()) > 0);
    await handle.signal(pauseSignal);
    await eventually(async () => {
      const status = await handle.query(statusQuery);
      const { pending = 0, kept = 0, rejected = 0, failed = 0 } = status.counts;
      return status.state === 'paused' && pending + kept + rejected + failed === seeds.length;
    });
    const decidedWhilePaused = await decided();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await decided()).toBe(decidedWhilePaused);
    expect((await handle.query(statusQuery)).counts.pending).toBeGreaterThan(0);
    await handle.signal(resumeSignal);

    const summary = await handle.result();
    expect(summary).toMatchObject({ tasks: seeds.length, kept: keptIdx.length, failed: 0 });
    expect(summary.rejectedByReason).toEqual(reasons);
    expect(new Set(expected)).toEqual(
      new Set(['kept', 'answers_disagree', 'source_mismatch', 'unparseable_answer']),
    );

    // Every problem's row: its outcome and reason as scripted, a persona scenario holding the
    // question, and 3 solutions from 3 distinct sample indices.
    const { rows } = await sql.query(
      `SELECT idx, kind, persona_id, scenario, solutions, answer, outcome, drop_reason, drop_detail
         FROM reasoning_problems WHERE run_id = $1 ORDER BY idx`,
      [handle.workflowId],
    );
    expect(rows).toHaveLength(seeds.length);
    const sandbox = { install: locateSandbox() };
    for (const row of rows) {
      const outcome = expected[row.idx]!;
      expect(row.outcome).toBe(outcome === 'kept' ? 'kept' : 'rejected');
      expect(row.drop_reason).toBe(outcome === 'kept' ? null : outcome);
      if (outcome !== 'kept') expect(row.drop_detail).toBeTruthy();
      expect(row.kind).toBe(seeds[row.idx]!.kind);
      expect(row.persona_id).toMatch(/^p\d+/);
      expect(row.scenario).toContain(seeds[row.idx]!.question);
      expect(row.scenario).not.toBe(seeds[row.idx]!.question);
      expect(row.solutions.map((s: { sampleIndex: number }) => s.sampleIndex)).toEqual([0, 1, 2]);
      if (outcome !== 'kept') continue;
      // Kept: all answers equivalent to each other, as an independent check sees it.
      const answers: string[] = row.solutions.map((s: { answer: string }) => s.answer);
      if (row.kind === 'search') expect(new Set(answers.map(normalizeAnswer)).size).toBe(1);
      else {
        const verdicts = await verifyMath(sandbox, [
          { gold: answers[0]!, answer: answers[1]! },
          { gold: answers[0]!, answer: answers[2]! },
          { gold: answers[1]!, answer: answers[2]! },
        ]);
        expect(verdicts.map((v) => v.equivalent)).toEqual([true, true, true]);
      }
      expect(new Set(answers).size).toBeGreaterThan(1); // written differently: not string equality
    }
    // Problems took the personas in turn.
    expect(new Set(rows.map((r) => r.persona_id)).size).toBeGreaterThan(1);

    // The ledger paid 1 rewrite and 3 solutions per problem, the solutions under sample indices 0-2.
    const ledger = await sql.query(
      `SELECT run_id, array_agg(sample_index ORDER BY sample_index) AS samples
         FROM llm_calls WHERE run_id LIKE $1 GROUP BY run_id`,
      [`${handle.workflowId}/problem-%`],
    );
    expect(ledger.rows).toHaveLength(seeds.length);
    for (const row of ledger.rows) expect(row.samples).toEqual([0, 0, 1, 2]);
    expect(models.stats.total).toBe(seeds.length * 4);

    // The status query answers each problem's outcome after the run.
    const lastIdx = seeds.length - 1;
    expect(await handle.query(taskStageQuery, keptIdx[0]!)).toBe('kept');
    expect(await handle.query(taskStageQuery, lastIdx)).toBe(
      expected[lastIdx] === 'kept' ? 'kept' : 'rejected',
    );

    // The run's report and the exported dataset.
    const run = await sql.query('SELECT status, summary FROM runs WHERE run_id = $1', [handle.workflowId]);
    expect(run.rows[0].status).toBe('completed');
    const report = run.rows[0].summary;
    expect(report.reasoning).toEqual({
      problems: seeds.length,
      kept: keptIdx.length,
      rejected: seeds.length - keptIdx.length,
      rejectedByReason: reasons,
      seedLinesRefused: 0,
    });
    const exported = (await readFile(report.dataset.reasoningFile, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(exported.map((e) => e.source.question)).toEqual(keptIdx.map((i) => seeds[i]!.question));
    for (const problem of exported) {
      expect(problem.solutions).toHaveLength(3);
      expect(problem.question).toContain(problem.source.question);
      expect(problem.answer).toBe(problem.solutions[0].answer);
    }

    // mockworld export's jsonl format writes the same file beside tasks.jsonl.
    const pool = new pg.Pool({ connectionString: db.url });
    try {
      const out = path.join(dir, 'export');
      const formats = await exportRunFormats(pool, handle.workflowId, out, ['jsonl']);
      expect(formats.files['reasoning.jsonl']).toBe(path.join(out, 'reasoning.jsonl'));
      expect(await readFile(formats.files['reasoning.jsonl']!, 'utf8')).toBe(
        await readFile(report.dataset.reasoningFile, 'utf8'),
      );
    } finally {
      await pool.end();
    }

    // The first run (seeds loaded, paused and resumed) and the last (the rest, the export).
    await recordHistory(handle.workflowId, 'synthesis-reasoning-first-run', handle.firstExecutionRunId);
    await recordHistory(handle.workflowId, 'synthesis-reasoning-last-run');
  });

  it('refuses a bad reasoning section at start, naming every bad field', async () => {
    const handle = await tw.client.workflow.start('Synthesis', {
      args: [
        {
          kind: 'Synthesis',
          personas: { path: 'personas.jsonl' },
          tasks: 0,
          reasoning: { seeds: { offset: -1 }, problems: 0, solutions: 1, sources: 'hf' },
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: `reasoning-bad-spec-${Date.now()}`,
    });
    const failure = await handle.result().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const message = String((failure as WorkflowFailedError).cause?.message);
    for (const field of [
      'reasoning.seeds.path',
      'reasoning.seeds.offset',
      'reasoning.problems',
      'reasoning.solutions',
      'reasoning: ',
    ]) {
      expect(message).toContain(field);
    }
    expect(message).toContain('sources');
    // Nothing ran: no problem was loaded.
    const loaded = await sql.query('SELECT count(*)::int AS n FROM reasoning_problems WHERE run_id = $1', [
      handle.workflowId,
    ]);
    expect(loaded.rows[0].n).toBe(0);

    // Without a reasoning section, a run of 0 tasks is refused too, naming tasks.
    const empty = await tw.client.workflow.start('Synthesis', {
      args: [{ kind: 'Synthesis', personas: { path: 'personas.jsonl' }, tasks: 0 }],
      taskQueue: tw.taskQueue,
      workflowId: `reasoning-no-tasks-${Date.now()}`,
    });
    const refused = await empty.result().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(String((refused as WorkflowFailedError).cause?.message)).toMatch(/tasks: must be at least 1/);
  });

  it('records a problem whose activity failed for good as failed on its row, with the error', async () => {
    const line = (value: unknown) => JSON.stringify(value);
    await writeFile(path.join(dir, 'failing-personas.jsonl'), scriptedPersonas(2));
    await writeFile(
      path.join(dir, 'failing-seeds.jsonl'),
      [
        line({ kind: 'math', question: REFUSED_SOLVE, answer: '19' }),
        line({ kind: 'search', question: 'In which city is the Eiffel Tower?', answer: 'Paris' }),
      ].join('\n'),
    );
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    const workflowId = `reasoning-failing-${Date.now()}`;
    const summary = await tw.client.workflow.execute('Synthesis', {
      args: [
        {
          kind: 'Synthesis',
          name: 'failing-e2e',
          personas: { path: path.join(dir, 'failing-personas.jsonl') },
          tasks: 0,
          reasoning: { seeds: { path: path.join(dir, 'failing-seeds.jsonl') }, problems: 2 },
          concurrency: 1,
          models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId,
    });
    expect(summary).toMatchObject({ tasks: 2, kept: 1, failed: 1 });
    const problems = await sql.query(
      'SELECT idx, outcome, drop_reason, drop_detail FROM reasoning_problems WHERE run_id = $1 ORDER BY idx',
      [workflowId],
    );
    expect(problems.rows.map((r) => [r.idx, r.outcome, r.drop_reason])).toEqual([
      [0, 'failed', 'ModelRequestRejectedError'],
      [1, 'kept', null],
    ]);
    expect(problems.rows[0].drop_detail).toMatch(/400/);
  });

  it('runs tool-use tasks and reasoning problems in one run, refusing bad seed lines with reasons', async () => {
    await writeFile(path.join(dir, 'mixed-personas.jsonl'), scriptedPersonas(2));
    const line = (value: unknown) => JSON.stringify(value);
    await writeFile(
      path.join(dir, 'mixed-seeds.jsonl'),
      [
        line({ kind: 'search', question: 'In which city is the Eiffel Tower?', answer: 'Paris' }),
        '{not json',
        line({ kind: 'physics', question: 'How fast does light travel?' }),
        line({ kind: 'math', question: EMPTY_REWRITE, answer: '42' }),
        line({ kind: 'math', question: 'What is the remainder when 2^10 is divided by 7?', answer: '2' }),
        line({ kind: 'math', question: EMPTY_REWRITE, answer: '42', source: 'somewhere' }),
      ].join('\n'),
    );
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    const handle = await tw.client.workflow.start('Synthesis', {
      args: [
        {
          kind: 'Synthesis',
          name: 'mixed-e2e',
          personas: { path: path.join(dir, 'mixed-personas.jsonl') },
          tasks: 2,
          reasoning: { seeds: { path: path.join(dir, 'mixed-seeds.jsonl') }, problems: 10 },
          demonstrationsPerTask: 2,
          maxTurns: 6,
          concurrency: 3,
          tasksPerWorkflowRun: 2, // 5 units: continues as new twice, tool tasks first
          models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: `reasoning-mixed-${Date.now()}`,
    });
    const summary = await handle.result();
    const toolOutcomes = [scriptedOutcome(0), scriptedOutcome(1)];
    const reasons: Record<string, number> = { answers_disagree: 1, rewrite_failed: 1 };
    for (const outcome of toolOutcomes)
      if (outcome !== 'kept') reasons[outcome] = (reasons[outcome] ?? 0) + 1;
    const toolKept = toolOutcomes.filter((o) => o === 'kept').length;
    expect(summary).toMatchObject({ tasks: 5, kept: toolKept + 1, rejected: 4 - toolKept, failed: 0 });
    expect(summary.rejectedByReason).toEqual(reasons);

    const tasks = await sql.query('SELECT idx, stage FROM tasks WHERE run_id = $1 ORDER BY idx', [
      handle.workflowId,
    ]);
    expect(tasks.rows.map((r) => r.idx)).toEqual([0, 1]);
    const problems = await sql.query(
      `SELECT idx, line, persona_id, scenario, solutions, outcome, drop_reason
         FROM reasoning_problems WHERE run_id = $1 ORDER BY idx`,
      [handle.workflowId],
    );
    expect(problems.rows.map((r) => [r.line, r.outcome, r.drop_reason])).toEqual([
      [1, 'kept', null],
      [4, 'rejected', 'rewrite_failed'],
      [5, 'rejected', 'answers_disagree'],
    ]);
    expect(problems.rows.map((r) => r.persona_id)).toEqual(['p0', 'p1', 'p0']);
    // The failed rewrite was not solved: one call in the ledger, no scenario, no solutions.
    expect(problems.rows[1]).toMatchObject({ scenario: null, solutions: [] });
    const calls = await sql.query('SELECT count(*)::int AS n FROM llm_calls WHERE run_id = $1', [
      `${handle.workflowId}/problem-00001`,
    ]);
    expect(calls.rows[0].n).toBe(1);

    const refused = await sql.query(
      'SELECT line, reason FROM reasoning_seed_rejections WHERE run_id = $1 ORDER BY line',
      [handle.workflowId],
    );
    expect(refused.rows.map((r) => r.line)).toEqual([2, 3, 6]);
    expect(refused.rows[0].reason).toBe('not JSON');
    expect(refused.rows[1].reason).toMatch(/^kind: /);
    expect(refused.rows[2].reason).toMatch(/source/);

    const run = await sql.query('SELECT summary FROM runs WHERE run_id = $1', [handle.workflowId]);
    expect(run.rows[0].summary.reasoning).toMatchObject({ problems: 3, kept: 1, seedLinesRefused: 3 });
    expect(run.rows[0].summary.dataset.rows).toBe(toolKept);
    expect(run.rows[0].summary.dataset.reasoningRows).toBe(1);
  });
});
