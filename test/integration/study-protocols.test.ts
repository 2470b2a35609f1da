/**
 * The data path of every scaling-study protocol (seed 002), activity by activity: the study
 * activities are called directly (no Temporal) against a fresh PostgreSQL database and the
 * scripted model server, and every stored attempt, verdict, repair, selection, evolved question,
 * SFT example and trainer batch is compared with what the script makes inevitable.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../activities/llm/index.js';
import { getPool } from '../../activities/store/db.js';
import { nestedSubsets } from '../../activities/study/analysis/budgets.js';
import { cosineDistance } from '../../activities/study/protocols/selection.js';
import { buildCellDataset } from '../../activities/study/cell-dataset.js';
import { startCell } from '../../activities/study/cells.js';
import { selectByEmbedding } from '../../activities/study/embedding-selection.js';
import { evolveQuestion } from '../../activities/study/evolve.js';
import {
  acceptedTarget,
  cellId,
  studyCells,
  studyStreams,
  type Cell,
  type Stream,
} from '../../activities/study/grid.js';
import { createStudyActivities } from '../../activities/study/index.js';
import { CHECK_OPENING, FIX_OPENING } from '../../activities/study/protocols/repair.js';
import { personaSystemMessage } from '../../activities/study/protocols/persona.js';
import { teacherPrompt } from '../../activities/study/protocols/teacher-prompt.js';
import { questionsOf } from '../../activities/study/questions.js';
import { repairQuestion } from '../../activities/study/repair.js';
import { studyDirectory, writeStudyReport } from '../../activities/study/report.js';
import { sampleQuestion } from '../../activities/study/sampling.js';
import { ModelEndpointSchema } from '../../schemas/model-endpoint.js';
import type { Protocol } from '../../schemas/scaling-study-spec.js';
import { ScalingStudySpecSchema, type ScalingStudySpec } from '../../schemas/scaling-study-spec.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer, type ScriptedRequest } from '../../testkit/model-server.js';

interface Seed {
  readonly id: string;
  readonly domain: string;
  readonly question: string;
  readonly answer: string;
  readonly options?: string[];
}

/** Seed pool: 8 questions (Q1 = 2, Q2 = 4, Q4 = 8), numeric and multiple-choice answers. */
const SEEDS: Seed[] = [
  {
    id: 'm1',
    domain: 'mathematics',
    question:
      'A shop sells 17 red apples and 26 green apples on Monday morning. How many apples does the shop sell in total on Monday morning?',
    answer: '43',
  },
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
const TESTS: Seed[] = [{ id: 't1', domain: 'mathematics', question: 'What is 9 times 8?', answer: '72' }];
const PERSONAS = [
  { id: 'chef', persona: 'A pastry chef who measures everything twice.' },
  { id: 'pilot', persona: 'A retired airline pilot fond of checklists.' },
  { id: 'poet', persona: 'A poet who writes every argument as a short story.' },
];

/**
 * Teacher behaviour per attempt (attempt n = sample index n; its sampling seed is base + n, so
 * the base names the study). R right (exact match), W wrong (exact match), Y / N an answer in
 * words the exact-match path cannot decide, which the judge calls CORRECT / INCORRECT, G one on
 * which the judge answers neither, also after the reminder.
 */
const BASE_RS = 1000;
const BASE_FULL = 2000;
const BASE_STREAMS = 3000;
const PATTERN_RS: Record<string, string> = {
  m1: 'RWRRRR', // 2 accepted after wave 0 (attempts 0-2)
  m2: 'NWWWRR', // wave 0 all wrong (one judged by the LLM), wave 1 gives 2
  m3: 'WWWWWW', // never right: exhausted at the cap
  m4: 'RRRRRR', // wave 0 is drawn whole: 3 accepted where 2 were needed
  p1: 'YGRRRR', // LLM-correct, judge-failed, exact
  p2: 'GRWRRR', // judge-failed, right, wrong; wave 1 completes it
  p3: 'WWWWWW',
};

const seedById = new Map(SEEDS.map((s) => [s.id, s]));
const wrongOf = (q: Seed) => (q.options ? (q.answer === 'A' ? 'B' : 'A') : '999');
const FLAVOURS = [
  'adding',
  'regrouping',
  'estimating',
  'tabulating',
  'sketching',
  'checking',
  'halving',
  'pairing',
];

function teacherText(
  q: { id: string; answer: string },
  kind: string,
  attempt: number,
  base: number,
  wrong: string,
) {
  const head = `Attempt ${attempt} (study ${base}) on ${q.id}: ${FLAVOURS[attempt % FLAVOURS.length]} the quantities step by step.`;
  switch (kind) {
    case 'R':
      return `${head}\nThe final answer is \\boxed{${q.answer}}.`;
    case 'W':
      return `${head}\nThe final answer is \\boxed{${wrong}}.`;
    case 'Y':
      return `${head} JUDGE:YES\nThe final answer is \\boxed{about three}.`;
    case 'N':
      return `${head} JUDGE:NO\nThe final answer is \\boxed{about eleven}.`;
    case 'G':
      return `${head} JUDGE:GARBAGE\nThe final answer is \\boxed{roughly three}.`;
    default:
      throw new Error(`unknown kind ${kind}`);
  }
}

/** Evolve-Instruct candidates of seed m1, by sample index k. */
const CANDIDATES = [
  {
    // kept: far from its seed
    question:
      'A farmer plants 35 rows of corn with 12 plants in each row. How many corn plants are in the field?',
    options: ['420', '410', '400', '430'],
    answer_letter: 'A',
    answer_text: '420',
    explanation: '35 times 12 is 420.',
  },
  {
    // refused by the format filter: answer_text is not option A
    question: 'A baker fills 14 trays with 9 rolls each. How many rolls are baked?',
    options: ['126', '116', '136', '106'],
    answer_letter: 'A',
    answer_text: '127',
    explanation: '14 times 9 is 126.',
  },
  {
    // refused: its own seed again (token-set Jaccard 19/23 ≥ 0.7)
    question: SEEDS[0]!.question,
    options: ['43', '42', '41', '44'],
    answer_letter: 'A',
    answer_text: '43',
    explanation: '17 plus 26 is 43.',
  },
  {
    // refused: a near-copy of candidate 0, which was kept (Jaccard 20/22)
    question:
      'A farmer plants 35 rows of corn with 12 plants in each row. How many corn plants grow in the field?',
    options: ['420', '410', '400', '430'],
    answer_letter: 'A',
    answer_text: '420',
    explanation: '35 times 12 is 420.',
  },
  {
    // kept
    question: 'A cyclist rides 15 kilometres every day for 6 days. What distance does she ride altogether?',
    options: ['80 km', '90 km', '100 km', '75 km'],
    answer_letter: 'B',
    answer_text: '90 km',
    explanation: '15 times 6 is 90.',
  },
];
const KEPT = [0, 4];

const textOf = (content: unknown) => (typeof content === 'string' ? content : '');
const lastUser = (request: ScriptedRequest) =>
  textOf([...request.body.messages].reverse().find((m) => m.role === 'user')?.content);

function script(request: ScriptedRequest): string {
  switch (request.role) {
    case 'teacher': {
      const prompt = lastUser(request);
      const seed = request.body.seed!;
      const base = Math.floor(seed / 1000) * 1000;
      const attempt = seed - base;
      const evolved = KEPT.map((k) => CANDIDATES[k]!).find((c) => prompt.includes(c.question));
      if (evolved) {
        return teacherText({ id: 'evolved', answer: evolved.answer_letter }, 'R', attempt, base, 'D');
      }
      const q = SEEDS.find((s) => prompt.includes(s.question));
      if (!q) throw new Error(`unexpected teacher prompt: ${prompt.slice(0, 120)}`);
      const kind = base === BASE_RS ? PATTERN_RS[q.id]![attempt]! : 'R';
      return teacherText(q, kind, attempt, base, wrongOf(q));
    }
    case 'study-judge': {
      const prompt = textOf(request.body.messages[0]!.content);
      if (prompt.includes('JUDGE:YES')) return 'CORRECT';
      if (prompt.includes('JUDGE:NO')) return 'B';
      if (prompt.includes('JUDGE:GARBAGE')) {
        return request.body.messages.length > 1 ? 'Probably correct, I think.' : 'Let me think about that.';
      }
      // A control (issue 36): the question's reference or a wrong answer, graded honestly.
      const control =
        /<Gold Target Begin>:\s*(.*?)\s*<Gold Target End>[\s\S]*\\boxed\{(.*?)\}\.\s*<Predicted End>/.exec(
          prompt,
        );
      if (control && !prompt.includes('Attempt ')) return control[1] === control[2] ? 'CORRECT' : 'INCORRECT';
      return 'UNEXPECTED JUDGE CALL';
    }
    case 'trace-repairer': {
      const prompt = lastUser(request);
      const match = /Attempt (\d+) \(study \d+\) on (\w+):/.exec(prompt);
      if (!match) throw new Error('repair prompt without a wrong attempt');
      const [attempt, qid] = [Number(match[1]), match[2]!];
      const q = seedById.get(qid)!;
      const answer = qid === 'm3' && attempt === 1 ? wrongOf(q) : q.answer; // that one fix stays wrong
      return JSON.stringify({
        check: `Checking attempt ${attempt} of ${qid}: the last step is wrong.`,
        fixed_solution: `Reworking ${qid} from attempt ${attempt}: the quantities recombined.\nThe final answer is \\boxed{${answer}}.`,
      });
    }
    case 'question-evolver': {
      if (!lastUser(request).includes(SEEDS[0]!.question)) throw new Error('only m1 is evolved here');
      return JSON.stringify(CANDIDATES[request.body.seed! % 1000]);
    }
    default:
      throw new Error(`unexpected role ${request.role}`);
  }
}

const jsonl = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
const key = (r: { question_id: string; attempt: number }) => `${r.question_id}#${r.attempt}`;

describe('scaling-study protocols, activity by activity', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;
  let pool: pg.Pool;
  let dir: string;
  let study: ReturnType<typeof createStudyActivities>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-study-protocols-'));
    process.env.MOCKWORLD_HOME = dir; // before anything reads the environment (report directory)
    await writeFile(path.join(dir, 'seeds.jsonl'), jsonl(SEEDS));
    await writeFile(path.join(dir, 'test.jsonl'), jsonl(TESTS));
    await writeFile(path.join(dir, 'personas.jsonl'), jsonl(PERSONAS));
    [db, server] = await Promise.all([
      createTestDatabase('mw_study_protocols'),
      startModelServer({ script }),
    ]);
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 5, maxDelayMs: 20 } });
    pool = getPool(db.url);
    study = createStudyActivities(db.url, models);
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const spec = (base: number, extra: Record<string, unknown>): ScalingStudySpec => {
    const endpoint = { baseUrl: server.url, model: 'scripted' };
    return ScalingStudySpecSchema.parse({
      kind: 'ScalingStudy',
      questions: { seedPool: path.join(dir, 'seeds.jsonl'), testSet: path.join(dir, 'test.jsonl') },
      teacher: { endpoint, sampling: { temperature: 1.2, topP: 1, maxTokens: 256, seed: base } },
      judge: { endpoint, sampling: { temperature: 0, topP: 1, maxTokens: 16 } },
      student: { base: { kind: 'tiny', seed: 0 }, endpoint },
      ...extra,
    });
  };
  const prepare = (studyId: string, personas = false) =>
    study.prepareStudy({
      studyId,
      seedPool: path.join(dir, 'seeds.jsonl'),
      testSet: path.join(dir, 'test.jsonl'),
      ...(personas ? { personas: path.join(dir, 'personas.jsonl') } : {}),
    });
  const stream = (s: ScalingStudySpec, name: Stream['name']) =>
    studyStreams(s).find((st) => st.name === name)!;
  const sample = (
    studyId: string,
    s: ScalingStudySpec,
    st: Stream,
    questionId: string,
    maxAttempts?: number,
  ) =>
    sampleQuestion(models, pool, {
      studyId,
      stream: st,
      questionId,
      teacher: s.teacher,
      judge: s.judge,
      accepted: acceptedTarget(st, s),
      maxAttempts: maxAttempts ?? s.rejectionSampling.maxAttemptsPerQuestion,
      attemptsPerWave: s.rejectionSampling.attemptsPerWave,
      seed: s.seed,
    });
  const calls = () => ({
    teacher: server.requestCount('teacher'),
    judge: server.requestCount('study-judge'),
    repair: server.requestCount('trace-repairer'),
    evolve: server.requestCount('question-evolver'),
    embeddings: server.stats.embeddings,
  });
  /** Runs `fn` and returns its value with the model requests it made, per role. */
  async function counted<T>(fn: () => Promise<T>): Promise<{ value: T; made: ReturnType<typeof calls> }> {
    const before = calls();
    const value = await fn();
    const after = calls();
    const made = Object.fromEntries(
      Object.entries(after).map(([k, v]) => [k, v - before[k as keyof typeof before]]),
    ) as ReturnType<typeof calls>;
    return { value, made };
  }
  const none = { teacher: 0, judge: 0, repair: 0, evolve: 0, embeddings: 0 };

  interface AttemptRow {
    question_id: string;
    attempt: number;
    response: string;
    final_answer: string | null;
    correct: boolean | null;
    judged_by: string;
    persona_id: string | null;
    teacher_key: string;
    judge_key: string | null;
  }
  const attempts = async (studyId: string, streamName: string) =>
    (
      await pool.query<AttemptRow>(
        `SELECT question_id, attempt, response, final_answer, correct, judged_by, persona_id, teacher_key, judge_key
           FROM study_attempts WHERE study_id = $1 AND stream = $2 ORDER BY question_id, attempt`,
        [studyId, streamName],
      )
    ).rows;

  /** Registers and builds one cell; returns its data set and its examples in training order. */
  async function build(
    studyId: string,
    protocol: Protocol,
    budget: number,
    options: {
      pool?: 1 | 2 | 4;
      seed?: number;
      epochs?: number;
      globalBatch?: number;
      studySeed?: number;
    } = {},
  ) {
    const body = { protocol, pool: options.pool ?? 4, budget, seed: options.seed ?? 0 } as const;
    const cell: Cell = { cellId: cellId(body), ...body };
    await startCell(pool, studyId, cell);
    const trainerRunId = `${studyId}-cell-${cell.cellId}`;
    const dataset = await buildCellDataset(pool, {
      studyId,
      cell,
      trainerRunId,
      studySeed: options.studySeed ?? 11,
      epochs: options.epochs ?? 1,
      globalBatch: options.globalBatch ?? 8,
    });
    const { rows } = await pool.query<{
      question_id: string;
      attempt: number;
      kind: string;
      correct: boolean;
      stream: string;
    }>(
      `SELECT question_id, attempt, kind, correct, stream FROM study_cell_examples
        WHERE study_id = $1 AND cell_id = $2 ORDER BY position`,
      [studyId, cell.cellId],
    );
    return { cell, dataset, trainerRunId, rows, keys: rows.map(key) };
  }
  /** The assistant text trained on for each example of a cell, by example key. */
  async function trainedTexts(built: Awaited<ReturnType<typeof build>>) {
    const { rows } = await pool.query<{
      episode_id: string;
      payload: { messages: { role: string; content: string }[] };
    }>('SELECT episode_id, payload FROM trainer_batches WHERE run_id = $1', [built.trainerRunId]);
    const texts = new Map<string, string>();
    for (const row of rows) {
      const position = Number(row.episode_id.replace('example-', ''));
      texts.set(built.keys[position]!, row.payload.messages[1]!.content);
    }
    return texts;
  }

  // ---------------------------------------------------------------------------------------------
  // Plain RS (study A): R = 2, waves of 3, at most 6 attempts.
  const RS = 'study-rs';
  let specRs: ScalingStudySpec;
  let rsSampled: Promise<{ results: Record<string, unknown>; made: ReturnType<typeof calls> }> | undefined;
  const RS_QUESTIONS = ['m1', 'm2', 'm3', 'm4', 'p1', 'p2'];
  function sampleRs() {
    rsSampled ??= (async () => {
      specRs = spec(BASE_RS, {
        rejectionSampling: { acceptedPerQuestion: 2, maxAttemptsPerQuestion: 6, attemptsPerWave: 3 },
        budgets: [1, 2],
        protocols: [
          'rs',
          'judge-free',
          'judge-free-prompt-aligned',
          'trace-repair',
          'trace-repair-revised-only',
        ],
      });
      await prepare(RS);
      const { value, made } = await counted(() =>
        Promise.all(RS_QUESTIONS.map((q) => sample(RS, specRs, stream(specRs, 'rs'), q))),
      );
      return { results: Object.fromEntries(RS_QUESTIONS.map((q, i) => [q, value[i]])), made };
    })();
    return rsSampled;
  }

  it('RS: waves of 3 until 2 accepted, the cap exhausts, exact matches skip the judge, judge failures are recorded', async () => {
    const { results, made } = await sampleRs();
    expect(results).toEqual({
      m1: { attempts: 3, accepted: 2, exhausted: false },
      m2: { attempts: 6, accepted: 2, exhausted: false },
      m3: { attempts: 6, accepted: 0, exhausted: true },
      m4: { attempts: 3, accepted: 3, exhausted: false }, // a wave is drawn whole
      p1: { attempts: 3, accepted: 2, exhausted: false },
      p2: { attempts: 6, accepted: 4, exhausted: false },
    });
    // One teacher call per attempt; the judge only for the 4 undecidable answers (+1 reminder and
    // +1 repair of it each for the 2 unreadable verdicts), and 2 controls for each of the 3
    // questions it was asked about (m2, p1, p2).
    expect(made).toEqual({ ...none, teacher: 3 + 6 + 6 + 3 + 3 + 6, judge: 1 + 1 + 3 + 3 + 3 * 2 });
    const { rows: controls } = await pool.query(
      `SELECT question_id, kind, expected, verdict FROM study_judge_controls WHERE study_id = $1
        ORDER BY question_id, kind`,
      [RS],
    );
    expect(controls.map((c) => [c.question_id, c.kind, c.expected === c.verdict])).toEqual(
      ['m2', 'p1', 'p2'].flatMap((q) => [
        [q, 'reference', true],
        [q, 'wrong', true],
      ]),
    );

    const rows = await attempts(RS, 'rs');
    const verdicts = Object.fromEntries(rows.map((r) => [key(r), [r.correct, r.judged_by]]));
    expect(verdicts).toEqual({
      'm1#0': [true, 'exact'],
      'm1#1': [false, 'exact'],
      'm1#2': [true, 'exact'],
      'm2#0': [false, 'llm'],
      'm2#1': [false, 'exact'],
      'm2#2': [false, 'exact'],
      'm2#3': [false, 'exact'],
      'm2#4': [true, 'exact'],
      'm2#5': [true, 'exact'],
      'm3#0': [false, 'exact'],
      'm3#1': [false, 'exact'],
      'm3#2': [false, 'exact'],
      'm3#3': [false, 'exact'],
      'm3#4': [false, 'exact'],
      'm3#5': [false, 'exact'],
      'm4#0': [true, 'exact'],
      'm4#1': [true, 'exact'],
      'm4#2': [true, 'exact'],
      'p1#0': [true, 'llm'],
      'p1#1': [null, 'judge-failed'],
      'p1#2': [true, 'exact'],
      'p2#0': [null, 'judge-failed'],
      'p2#1': [true, 'exact'],
      'p2#2': [false, 'exact'],
      'p2#3': [true, 'exact'],
      'p2#4': [true, 'exact'],
      'p2#5': [true, 'exact'],
    });
    // Attempt n is the teacher's sample n (its seed base + n), stored with its final answer.
    for (const row of rows) {
      expect(row.response).toContain(`Attempt ${row.attempt} (study ${BASE_RS}) on ${row.question_id}:`);
      expect(row.judge_key === null).toBe(row.judged_by === 'exact');
    }
    expect(rows.find((r) => key(r) === 'm4#1')!.final_answer).toBe('B');
    expect(rows.find((r) => key(r) === 'm2#1')!.final_answer).toBe('999');

    // Both judge failures are in llm_rejections under the reminder's key.
    const failed = rows.filter((r) => r.judged_by === 'judge-failed');
    const { rows: rejections } = await pool.query(
      `SELECT cache_key, run_id, role, schema_name, raw_output FROM llm_rejections WHERE run_id = $1 ORDER BY cache_key`,
      [RS],
    );
    expect(rejections.map((r) => r.cache_key)).toEqual(failed.map((r) => r.judge_key).sort());
    for (const r of rejections) {
      expect(r).toMatchObject({ role: 'study-judge', schema_name: 'study-judge-verdict' });
      expect(r.raw_output).toBe('Probably correct, I think.');
    }
  });

  it('RS: the cap need not be a multiple of the wave (5 attempts in waves of 3)', async () => {
    const capped = 'study-rs-cap';
    await prepare(capped);
    const s = spec(BASE_RS, {
      rejectionSampling: { acceptedPerQuestion: 2, maxAttemptsPerQuestion: 5, attemptsPerWave: 3 },
      budgets: [1, 2],
    });
    const { value, made } = await counted(() => sample(capped, s, stream(s, 'rs'), 'p3'));
    expect(value).toEqual({ attempts: 5, accepted: 0, exhausted: true });
    expect(made).toEqual({ ...none, teacher: 5 });
    expect((await attempts(capped, 'rs')).map((r) => r.attempt)).toEqual([0, 1, 2, 3, 4]);
  });

  it('RS resumes: nothing is asked again, and deleted attempts are re-made exactly, one call each', async () => {
    const { results } = await sampleRs();
    const before = await attempts(RS, 'rs');
    const again = await counted(() =>
      Promise.all(RS_QUESTIONS.map((q) => sample(RS, specRs, stream(specRs, 'rs'), q))),
    );
    expect(again.made).toEqual(none);
    expect(Object.fromEntries(RS_QUESTIONS.map((q, i) => [q, again.value[i]]))).toEqual(results);
    expect(await attempts(RS, 'rs')).toEqual(before);

    // An interrupted wave: m1's wrong attempt 1 (R was already reached by 0 and 2) and m2's
    // accepted attempt 5 (in wave 1) are lost together with their cached teacher answers.
    const lost = before.filter((r) => ['m1#1', 'm2#5'].includes(key(r)));
    for (const r of lost) {
      await pool.query(
        'DELETE FROM study_attempts WHERE study_id = $1 AND question_id = $2 AND attempt = $3',
        [RS, r.question_id, r.attempt],
      );
      await pool.query('DELETE FROM llm_calls WHERE cache_key = $1', [r.teacher_key]);
    }
    const resumed = await counted(() =>
      Promise.all(['m1', 'm2'].map((q) => sample(RS, specRs, stream(specRs, 'rs'), q))),
    );
    expect(resumed.made).toEqual({ ...none, teacher: 2 });
    expect(resumed.value).toEqual([results.m1, results.m2]);
    expect(await attempts(RS, 'rs')).toEqual(before);
  });

  it('RS cells: the set at r is the first r accepted by attempt; judge failures are never admitted', async () => {
    await sampleRs();
    const r1 = await build(RS, 'rs', 1);
    const r2 = await build(RS, 'rs', 2);
    expect(r1.keys).toEqual(['m1#0', 'm2#4', 'm4#0', 'p1#0', 'p2#1']);
    expect(r2.keys).toEqual(['m1#0', 'm1#2', 'm2#4', 'm2#5', 'm4#0', 'm4#1', 'p1#0', 'p1#2', 'p2#1', 'p2#3']);
    expect(r1.keys.every((k) => r2.keys.includes(k))).toBe(true);
    expect(r2.rows.every((r) => r.correct && r.kind === 'sample' && r.stream === 'rs')).toBe(true);
    expect(r2.dataset).toEqual({ examples: 10, questions: 5, steps: 2 });
    // The trained text of an example is its stored response, under the teacher's prompt.
    const texts = await trainedTexts(r2);
    const rows = new Map((await attempts(RS, 'rs')).map((r) => [key(r), r.response]));
    for (const k of r2.keys) expect(texts.get(k)).toBe(rows.get(k));
  });

  it('judge-free admits the first r attempts whatever their verdict; the prompt-aligned variant only where RS has a correct one', async () => {
    await sampleRs();
    const free1 = await build(RS, 'judge-free', 1);
    const free2 = await build(RS, 'judge-free', 2);
    const aligned2 = await build(RS, 'judge-free-prompt-aligned', 2);
    expect(free1.keys).toEqual(['m1#0', 'm2#0', 'm3#0', 'm4#0', 'p1#0', 'p2#0']);
    expect(free2.keys).toEqual([
      'm1#0',
      'm1#1',
      'm2#0',
      'm2#1',
      'm3#0',
      'm3#1',
      'm4#0',
      'm4#1',
      'p1#0',
      'p1#1',
      'p2#0',
      'p2#1',
    ]);
    expect(free2.rows.map((r) => r.correct)).toEqual([
      true,
      false,
      false,
      false,
      false,
      false,
      true,
      true,
      true,
      null, // p1#1 and p2#0: the judge failed; admitted without a verdict, never counted as wrong
      null,
      true,
    ]);
    // m3 has no correct RS attempt: its prompt is not in the RS subset.
    expect(aligned2.keys).toEqual(free2.keys.filter((k) => !k.startsWith('m3#')));
    expect(aligned2.dataset).toMatchObject({ examples: 10, questions: 5 });
  });

  it('trace repair: wrong attempts among the first r judged are repaired once; only correct fixes are admitted', async () => {
    await sampleRs();
    const repaired = await counted(() =>
      Promise.all(
        RS_QUESTIONS.map((q) =>
          repairQuestion(models, pool, {
            studyId: RS,
            questionId: q,
            teacher: specRs.teacher,
            judge: specRs.judge,
            upTo: 2,
          }),
        ),
      ),
    );
    // m1#1, m2#0, m2#1, m3#0, m3#1 and p2#2 (p2's first two judged attempts are 1 and 2: attempt 0's
    // verdict failed). Every fix is decided by exact match: no judge call.
    expect(repaired.made).toEqual({ ...none, repair: 6 });
    const { rows: repairs } = await pool.query<{
      question_id: string;
      attempt: number;
      trace: string;
      revised: string;
      correct: boolean;
    }>(
      'SELECT question_id, attempt, trace, revised, correct FROM study_repairs WHERE study_id = $1 ORDER BY question_id, attempt',
      [RS],
    );
    expect(Object.fromEntries(repairs.map((r) => [key(r), r.correct]))).toEqual({
      'm1#1': true,
      'm2#0': true,
      'm2#1': true,
      'm3#0': true,
      'm3#1': false,
      'p2#2': true,
    });
    const again = await counted(() =>
      repairQuestion(models, pool, {
        studyId: RS,
        questionId: 'm2',
        teacher: specRs.teacher,
        judge: specRs.judge,
        upTo: 2,
      }),
    );
    expect(again.made).toEqual(none);
    expect(again.value).toEqual({ repaired: 0, correct: 0, rejected: 0 });

    const trace = await build(RS, 'trace-repair', 2);
    const revised = await build(RS, 'trace-repair-revised-only', 2);
    const expected = ['m1#0', 'm1#1', 'm2#0', 'm2#1', 'm3#0', 'm4#0', 'm4#1', 'p1#0', 'p1#2', 'p2#1', 'p2#2'];
    const repairedKeys = ['m1#1', 'm2#0', 'm2#1', 'm3#0', 'p2#2'];
    expect(trace.keys).toEqual(expected); // m3#1's fix is wrong: dropped; p1#1 has no verdict: never used
    expect(revised.keys).toEqual(expected);
    expect(trace.rows.every((r) => r.correct)).toBe(true);
    expect(trace.rows.filter((r) => r.kind === 'repair-trace').map(key)).toEqual(repairedKeys);
    expect(revised.rows.filter((r) => r.kind === 'repair-revised').map(key)).toEqual(repairedKeys);
    expect((await build(RS, 'trace-repair', 1)).keys).toEqual([
      'm1#0',
      'm2#0',
      'm3#0',
      'm4#0',
      'p1#0',
      'p2#1',
    ]);

    // What is trained: wrong → check → fix, or the fixed solution alone.
    const original = new Map((await attempts(RS, 'rs')).map((r) => [key(r), r.response]));
    const traceTexts = await trainedTexts(trace);
    const revisedTexts = await trainedTexts(revised);
    for (const k of repairedKeys) {
      const [qid, n] = k.split('#');
      const fixed = `Reworking ${qid} from attempt ${n}: the quantities recombined.\nThe final answer is \\boxed{${seedById.get(qid!)!.answer}}.`;
      const check = `Checking attempt ${n} of ${qid}: the last step is wrong.`;
      expect(traceTexts.get(k)).toBe(
        [original.get(k), CHECK_OPENING, check, FIX_OPENING, fixed].join('\n\n'),
      );
      expect(revisedTexts.get(k)).toBe(fixed);
    }
    expect(traceTexts.get('m1#0')).toBe(original.get('m1#0'));
  });

  // ---------------------------------------------------------------------------------------------
  it('temperature and persona streams: each request carries its stream temperature; personas are chosen deterministically', async () => {
    const id = 'study-streams';
    const s = spec(BASE_STREAMS, {
      protocols: ['temperature-0.6', 'temperature-0.001', 'persona'],
      budgets: [1, 2],
      rejectionSampling: { acceptedPerQuestion: 2, maxAttemptsPerQuestion: 6, attemptsPerWave: 3 },
      personas: path.join(dir, 'personas.jsonl'),
      seed: 5,
    });
    const prepared = await prepare(id, true);
    expect(prepared.personas).toMatchObject({ loaded: 3, rejected: 0 });
    const names = ['temperature-low', 'temperature-greedy', 'persona'] as const;
    const temperatures = { 'temperature-low': 0.6, 'temperature-greedy': 0.001, persona: 1.2 };
    for (const name of names) {
      const from = server.requests.length;
      const { value, made } = await counted(() => sample(id, s, stream(s, name), 'm1'));
      expect(value).toEqual({ attempts: 3, accepted: 3, exhausted: false });
      expect(made).toEqual({ ...none, teacher: 3 });
      const sent = server.requests.slice(from).filter((r) => r.role === 'teacher');
      expect(sent.map((r) => r.body.temperature)).toEqual([1, 2, 3].map(() => temperatures[name]));
      const rows = await attempts(id, name);
      expect(rows.map((r) => r.attempt)).toEqual([0, 1, 2]);
      for (const request of sent) {
        const n = request.body.seed! - BASE_STREAMS;
        const first = request.body.messages[0]!;
        if (name !== 'persona') {
          expect(request.body.messages.map((m) => m.role)).toEqual(['user']);
          continue;
        }
        // The documented rule, recomputed: first 48 bits of SHA-256([seed, question, attempt]) mod 3.
        const digest = createHash('sha256')
          .update(JSON.stringify([5, 'm1', n]))
          .digest();
        const persona = PERSONAS[digest.readUIntBE(0, 6) % PERSONAS.length]!;
        expect(request.body.messages.map((m) => m.role)).toEqual(['system', 'user']);
        expect(first.content).toBe(personaSystemMessage(persona.persona));
        expect(rows[n]!.persona_id).toBe(persona.id);
      }
      if (name !== 'persona') expect(rows.every((r) => r.persona_id === null)).toBe(true);
    }
    // The plain RS stream of this study was never sampled.
    expect(await attempts(id, 'rs')).toEqual([]);
    // Re-sampling asks nothing (same personas, same cached calls).
    const again = await counted(() => Promise.all(names.map((n) => sample(id, s, stream(s, n), 'm1'))));
    expect(again.made).toEqual(none);
  });

  // ---------------------------------------------------------------------------------------------
  // One study where every question reaches R = 4: embedding selection, question synthesis,
  // source expansion and the cell data sets.
  const FULL = 'study-full';
  let specFull: ScalingStudySpec;
  let fullSampled: Promise<void> | undefined;
  function sampleFull() {
    fullSampled ??= (async () => {
      specFull = spec(BASE_FULL, {
        protocols: ['rs', 'embedding-selection', 'question-synthesis'],
        budgets: [1, 2, 4],
        rejectionSampling: { acceptedPerQuestion: 4, maxAttemptsPerQuestion: 8, attemptsPerWave: 4 },
        questionSynthesis: { perSeed: CANDIDATES.length, budgets: [1], maxSimilarity: 0.7 },
        sourceExpansion: { buckets: [4] },
        embeddings: { baseUrl: server.url, model: 'embedder' },
        trainingSeeds: 1,
      });
      await prepare(FULL);
      const { value, made } = await counted(() =>
        Promise.all(SEEDS.map((q) => sample(FULL, specFull, stream(specFull, 'rs'), q.id))),
      );
      expect(value.every((v) => v.attempts === 4 && v.accepted === 4 && !v.exhausted)).toBe(true);
      expect(made).toEqual({ ...none, teacher: 32 });
    })();
    return fullSampled;
  }

  it('embedding selection: stored once, r = 1 is RS first accepted, r = |pool| is the RS set, nested prefixes', async () => {
    await sampleFull();
    const embeddings = ModelEndpointSchema.parse(specFull.embeddings);
    const first = await counted(() =>
      Promise.all(SEEDS.map((q) => selectByEmbedding(pool, { studyId: FULL, questionId: q.id, embeddings }))),
    );
    expect(first.value).toEqual(SEEDS.map(() => ({ selected: 4 })));
    expect(first.made).toEqual({ ...none, embeddings: SEEDS.length });
    const stored = async () =>
      (
        await pool.query<{ question_id: string; selection: number[] }>(
          'SELECT question_id, selection FROM study_selections WHERE study_id = $1 ORDER BY question_id',
          [FULL],
        )
      ).rows;
    const selections = await stored();
    const again = await counted(() =>
      selectByEmbedding(pool, { studyId: FULL, questionId: 'm1', embeddings }),
    );
    expect(again.made).toEqual(none);
    expect(again.value).toEqual({ selected: 4 });
    expect(await stored()).toEqual(selections);

    // Greedy farthest point, checked against the endpoint's own vectors: the second pick is the
    // response farthest (cosine) from the first accepted one.
    const rows = await attempts(FULL, 'rs');
    for (const { question_id, selection } of selections) {
      expect([...selection].sort()).toEqual([0, 1, 2, 3]);
      expect(selection[0]).toBe(0);
      const texts = rows.filter((r) => r.question_id === question_id).map((r) => r.response);
      const response = await fetch(`${server.url}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'embedder', input: texts, encoding_format: 'float' }),
      });
      const vectors = ((await response.json()) as { data: { embedding: number[] }[] }).data.map(
        (d) => d.embedding,
      );
      const distances = vectors.map((v) => cosineDistance(v, vectors[0]!));
      expect(selection[1]).toBe(distances.indexOf(Math.max(...distances.slice(1))));
    }

    const rs1 = await build(FULL, 'rs', 1);
    const rs4 = await build(FULL, 'rs', 4);
    const e1 = await build(FULL, 'embedding-selection', 1);
    const e2 = await build(FULL, 'embedding-selection', 2);
    const e4 = await build(FULL, 'embedding-selection', 4);
    expect(e1.keys).toEqual(rs1.keys);
    expect(e4.keys).toEqual(rs4.keys);
    const bySelection = selections.flatMap((s) =>
      s.selection.slice(0, 2).map((a) => `${s.question_id}#${a}`),
    );
    expect(new Set(e2.keys)).toEqual(new Set(bySelection));
    expect(e2.keys).toHaveLength(16);
    expect(e1.keys.every((k) => e2.keys.includes(k)) && e2.keys.every((k) => e4.keys.includes(k))).toBe(true);
    expect(e2.rows.every((r) => r.stream === 'rs' && r.kind === 'sample' && r.correct)).toBe(true);
  });

  it('question synthesis: format-valid dissimilar candidates become <seed>~evo<k>, refusals are recorded, a retry changes nothing', async () => {
    await sampleFull();
    const input = {
      studyId: FULL,
      questionId: 'm1',
      teacher: specFull.teacher,
      perSeed: specFull.questionSynthesis.perSeed,
      maxSimilarity: specFull.questionSynthesis.maxSimilarity,
    };
    const first = await counted(() => evolveQuestion(models, pool, input));
    expect(first.made).toEqual({ ...none, evolve: CANDIDATES.length });
    expect(first.value.kept).toBe(2);
    const evolvedRows = async () =>
      (
        await pool.query(
          `SELECT question_id, idx, domain, question, answer, options, parent_id FROM study_questions
          WHERE study_id = $1 AND source = 'evolved' ORDER BY idx`,
          [FULL],
        )
      ).rows;
    const rejectionRows = async () =>
      (
        await pool.query<{ line: number; reason: string }>(
          `SELECT line, reason FROM study_question_rejections WHERE study_id = $1 AND source = 'evolved' ORDER BY line`,
          [FULL],
        )
      ).rows;
    expect(await evolvedRows()).toEqual(
      KEPT.map((k) => ({
        question_id: `m1~evo${k}`,
        idx: k, // m1 is seed 0: idx = 0 · perSeed + k
        domain: 'mathematics',
        question: CANDIDATES[k]!.question,
        answer: CANDIDATES[k]!.answer_letter,
        options: CANDIDATES[k]!.options,
        parent_id: 'm1',
      })),
    );
    const rejections = await rejectionRows();
    expect(rejections.map((r) => r.line)).toEqual([1, 2, 3]);
    expect(rejections[0]!.reason).toMatch(/^m1 candidate 1: answer_text_mismatch: /);
    expect(rejections[1]!.reason).toMatch(/^m1 candidate 2: similar_to_seed \(similarity 0\.83\)$/);
    expect(rejections[2]!.reason).toMatch(/^m1 candidate 3: similar_to_kept \(similarity 0\.91\)$/);
    expect(Object.values(first.value.rejected).reduce((a, b) => a + b, 0)).toBe(3);

    const retry = await counted(() => evolveQuestion(models, pool, input));
    expect(retry.made).toEqual(none);
    expect(retry.value).toEqual(first.value);
    expect(await rejectionRows()).toEqual(rejections);
    expect(await evolvedRows()).toHaveLength(2);

    // The evolved stream samples the kept questions; question synthesis trains on them at r = k.
    const evolved = await questionsOf(pool, FULL, 'evolved');
    const st = stream(specFull, 'evolved');
    expect(st).toMatchObject({ questions: 'evolved', temperature: 1.2 });
    const sampled = await counted(() =>
      Promise.all(evolved.map((q) => sample(FULL, specFull, st, q.questionId))),
    );
    expect(sampled.value).toEqual(evolved.map(() => ({ attempts: 4, accepted: 4, exhausted: false })));
    expect(sampled.made).toEqual({ ...none, teacher: 8 });
    const synth = await build(FULL, 'question-synthesis', 1);
    expect(synth.keys).toEqual(['m1~evo0#0', 'm1~evo4#0']);
    expect(synth.rows.every((r) => r.stream === 'evolved' && r.correct)).toBe(true);
    const { rows: batches } = await pool.query<{ payload: { messages: { content: string }[] } }>(
      'SELECT payload FROM trainer_batches WHERE run_id = $1',
      [synth.trainerRunId],
    );
    expect(batches.map((b) => b.payload.messages[0]!.content).sort()).toEqual(
      (await Promise.all(evolved.map((q) => teacherPrompt(q)))).sort(),
    );
  });

  it('source expansion: the grid cells of the spec, nested pools Q1 ⊂ Q2 ⊂ Q4, |Q_q| · r examples in the bucket', async () => {
    await sampleFull();
    expect(new Set(studyCells(specFull).map((c) => c.cellId))).toEqual(
      new Set([
        'rs-q4-r1-s0',
        'rs-q4-r2-s0',
        'rs-q4-r4-s0',
        'embedding-selection-q4-r1-s0',
        'embedding-selection-q4-r2-s0',
        'embedding-selection-q4-r4-s0',
        'question-synthesis-q4-r1-s0',
        'rs-q2-r2-s0',
        'rs-q1-r4-s0',
      ]),
    );
    const q4 = await build(FULL, 'rs', 1, { pool: 4, studySeed: 11 });
    const q2 = await build(FULL, 'rs', 2, { pool: 2, studySeed: 11 });
    const q1 = await build(FULL, 'rs', 4, { pool: 1, studySeed: 11 });
    for (const [built, size, r] of [
      [q4, 8, 1],
      [q2, 4, 2],
      [q1, 2, 4],
    ] as const) {
      expect(built.dataset.examples).toBe(size * r); // bucket B = 4: |Q4|·B/4 = 8 each
      expect(built.dataset.questions).toBe(size);
      // Every chosen question contributes exactly its first r accepted attempts.
      for (const qid of new Set(built.rows.map((row) => row.question_id))) {
        expect(built.rows.filter((row) => row.question_id === qid).map((row) => row.attempt)).toEqual(
          Array.from({ length: r }, (_, i) => i),
        );
      }
    }
    const questions = (b: typeof q1) => new Set(b.rows.map((r) => r.question_id));
    const [s1, s2, s4] = [questions(q1), questions(q2), questions(q4)];
    expect([...s1].every((q) => s2.has(q)) && [...s2].every((q) => s4.has(q))).toBe(true);
    expect(s4).toEqual(new Set(SEEDS.map((s) => s.id)));
    // The subsets are the study seed's: another seed draws another Q1 for the same ids.
    const subsets = nestedSubsets(
      SEEDS.map((s) => s.id),
      11,
    );
    expect(s1).toEqual(new Set(subsets.q1));
    expect(s2).toEqual(new Set(subsets.q2));
  });

  it('buildCellDataset: epochs × ⌈examples / batch⌉ steps, every epoch a permutation, insert-only on a second call', async () => {
    await sampleFull();
    // Training seed 1: a cell of its own (rs-q4-r4-s0 was built above with other batch settings).
    const options = { seed: 1, epochs: 2, globalBatch: 3, studySeed: 11 };
    const built = await build(FULL, 'rs', 4, options);
    expect(built.dataset).toEqual({ examples: 32, questions: 8, steps: 2 * Math.ceil(32 / 3) });
    const dump = async () =>
      (
        await pool.query<{
          step: number;
          episode_id: string;
          payload: { messages: { role: string; content: string }[] };
          created_at: Date;
        }>(
          'SELECT step, episode_id, payload, created_at FROM trainer_batches WHERE run_id = $1 ORDER BY step, episode_id',
          [built.trainerRunId],
        )
      ).rows;
    const batches = await dump();
    expect(batches).toHaveLength(32 * 2);
    const perEpoch = Math.ceil(32 / 3);
    const orders: number[][] = [];
    for (let epoch = 0; epoch < 2; epoch++) {
      const rows = batches.filter((b) => b.step > epoch * perEpoch && b.step <= (epoch + 1) * perEpoch);
      const positions = rows.map((b) => Number(b.episode_id.replace('example-', '')));
      expect([...positions].sort((a, b) => a - b)).toEqual(Array.from({ length: 32 }, (_, i) => i));
      for (let step = epoch * perEpoch + 1; step <= (epoch + 1) * perEpoch; step++) {
        expect(rows.filter((b) => b.step === step)).toHaveLength(
          step === (epoch + 1) * perEpoch ? 32 - 3 * (perEpoch - 1) : 3,
        );
      }
      orders.push(positions);
    }
    expect(orders[0]).not.toEqual(orders[1]); // reshuffled per epoch
    // Each record is the example's prompt and stored response.
    const responses = new Map((await attempts(FULL, 'rs')).map((r) => [key(r), r.response]));
    for (const b of batches) {
      const example = built.keys[Number(b.episode_id.replace('example-', ''))]!;
      const qid = example.split('#')[0]!;
      expect(b.payload.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(b.payload.messages[0]!.content).toContain(seedById.get(qid)!.question);
      expect(b.payload.messages[1]!.content).toBe(responses.get(example));
    }
    const cellRow = async () =>
      (
        await pool.query(
          'SELECT examples, questions, steps FROM study_cells WHERE study_id = $1 AND cell_id = $2',
          [FULL, built.cell.cellId],
        )
      ).rows[0];
    expect(await cellRow()).toEqual({ examples: 32, questions: 8, steps: 22 });

    const second = await build(FULL, 'rs', 4, options);
    expect(second.dataset).toEqual(built.dataset);
    expect(second.keys).toEqual(built.keys);
    expect(await dump()).toEqual(batches);
    expect(await cellRow()).toEqual({ examples: 32, questions: 8, steps: 22 });
  });

  // ---------------------------------------------------------------------------------------------
  it('writeStudyReport: report.md and one SVG per curve under MOCKWORLD_HOME/studies/<id>/', async () => {
    const id = 'study-report';
    expect(studyDirectory(id)).toBe(path.join(dir, 'studies', id));
    const empty = await writeStudyReport(pool, id);
    expect(empty.summary).toMatchObject({ evaluatedCells: 0, protocols: {} });
    expect(empty.standing).toMatchObject({ controlPassRate: null, unreliable: false });
    expect(await readFile(empty.reportPath, 'utf8')).toContain('No cell has been evaluated yet.');

    // Evaluated, but the judge graded no sample: the report says so instead of "not evaluated".
    const unjudged = 'study-report-unjudged';
    await pool.query(
      `INSERT INTO study_cells (study_id, cell_id, protocol, pool, budget, seed, finished_at)
       VALUES ($1, 'rs-q4-r1-s0', 'rs', 4, 1, 0, now())`,
      [unjudged],
    );
    for (const sample of [0, 1])
      await pool.query(
        `INSERT INTO study_evaluations (study_id, cell_id, question_id, sample, response, correct, judged_by)
         VALUES ($1, 'rs-q4-r1-s0', 'test:t01', $2, '?', NULL, 'judge-failed')`,
        [unjudged, sample],
      );
    const failed = await readFile((await writeStudyReport(pool, unjudged)).reportPath, 'utf8');
    expect(failed).toContain('1 cell(s) evaluated, none with a score');
    expect(failed).toContain('2 judge failures');
    expect(failed).toMatch(/\| rs-q4-r1-s0 \|.*\| — \| 0 \| 2 \|/);

    const score = (r: number, seed: number) => 0.6 - 0.3 * r ** -0.5 + (seed === 0 ? 0.004 : -0.004);
    const cells: [Protocol, number, number, number, number | null][] = [];
    for (const r of [1, 2, 4, 8, 16, 32])
      for (const seed of [0, 1]) cells.push(['rs', 4, r, seed, score(r, seed)]);
    for (const r of [1, 2, 4]) cells.push(['persona', 4, r, 0, score(r, 0) - 0.01]);
    cells.push(['rs', 2, 2, 0, 0.41], ['rs', 1, 4, 0, 0.4], ['rs', 2, 4, 0, 0.45], ['rs', 1, 8, 0, 0.43]);
    cells.push(['judge-free', 4, 1, 0, null]); // not evaluated yet: not in the report
    for (const [protocol, q, r, seed, s] of cells) {
      await pool.query(
        `INSERT INTO study_cells (study_id, cell_id, protocol, pool, budget, seed, score, finished_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $7::float8 IS NULL THEN NULL ELSE now() END)`,
        [id, cellId({ protocol, pool: q as 1 | 2 | 4, budget: r, seed }), protocol, q, r, seed, s],
      );
    }
    const written = await writeStudyReport(pool, id);
    expect(written.reportPath).toBe(path.join(dir, 'studies', id, 'report.md'));
    const best = (protocol: Protocol, budgets: number[], seeds: number[], shift = 0) =>
      Math.round(
        Math.max(...budgets.map((r) => seeds.reduce((a, s) => a + score(r, s) + shift, 0) / seeds.length)) *
          10_000,
      ) / 100;
    expect(written.summary.evaluatedCells).toBe(cells.length - 1);
    expect(written.summary.protocols).toEqual({
      rs: { budgets: [1, 2, 4, 8, 16, 32], bestMeanPct: best('rs', [32], [0, 1]) },
      persona: { budgets: [1, 2, 4], bestMeanPct: best('persona', [4], [0], -0.01) },
    });
    const files = (await readdir(path.join(dir, 'studies', id))).sort();
    expect(files).toEqual(['curve-persona.svg', 'curve-rs.svg', 'report.md']);
    for (const svg of ['curve-persona.svg', 'curve-rs.svg']) {
      expect(await readFile(path.join(dir, 'studies', id, svg), 'utf8')).toMatch(/^<svg[\s\S]*<\/svg>\s*$/);
    }
    const report = await readFile(written.reportPath, 'utf8');
    expect(report).toContain(`# Scaling study ${id}`);
    expect(report).toContain('r=32');
    expect(report).toContain('## Matched-budget buckets');
    // Unscored cells are left out of the analysis; the cells table lists them without a score.
    const [analysis, cellsTable] = report.split('## Cells');
    expect(analysis).not.toContain('judge-free');
    expect(cellsTable).toMatch(/\| judge-free-q4-r1-s0 \|.*\| — \| 0 \| 0 \|/);
    expect(report).not.toContain('No cell has been evaluated yet.');
  });
});
