import { readFile } from 'node:fs/promises';
import type pg from 'pg';
import { resolveDataFile } from '../data-files.js';
import { QuestionLineSchema, type QuestionLine } from '../../schemas/study-question.js';
import { StudyInputError } from './errors.js';

/** A question as the study activities use it. */
export interface StudyQuestion {
  readonly questionId: string;
  readonly domain: string;
  readonly question: string;
  readonly answer: string;
  readonly options: string[] | null;
}

export interface LoadQuestionsResult {
  readonly loaded: number;
  readonly rejected: number;
  readonly rejectedByReason: Record<string, number>;
  readonly domains: Record<string, number>;
}

function checkLine(text: string): QuestionLine | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  const parsed = QuestionLineSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  return parsed.error.issues.map((i) => `${i.path.join('.') || 'line'}: ${i.message}`).join('; ');
}

/**
 * Reads a question JSONL file into `study_questions` (valid lines in file order, deduplicated by
 * id) and records each refused line with its reason. Idempotent: a retry inserts nothing new, and
 * an edited file never rewrites questions a study has already sampled.
 */
export async function loadQuestions(
  pool: pg.Pool,
  input: { studyId: string; source: 'seed' | 'test'; path: string },
): Promise<LoadQuestionsResult> {
  const file = resolveDataFile(input.path, `${input.source} questions`);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new StudyInputError(
      input.studyId,
      `cannot read ${input.source} questions from ${file}: ${(error as Error).message}`,
    );
  }
  const valid: QuestionLine[] = [];
  const refused: { line: number; reason: string }[] = [];
  const ids = new Set<string>();
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const checked = checkLine(line);
    if (typeof checked === 'string') refused.push({ line: i + 1, reason: checked });
    else if (ids.has(checked.id)) refused.push({ line: i + 1, reason: 'duplicate id' });
    else {
      ids.add(checked.id);
      valid.push(checked);
    }
  });
  if (valid.length === 0) {
    throw new StudyInputError(
      input.studyId,
      `${file} holds no valid question (${refused.length} lines refused): nothing to study`,
    );
  }
  // Test questions get their own id space, so a test id equal to a seed id is not a collision.
  const qid = (id: string) => (input.source === 'test' ? `test:${id}` : id);
  await pool.query(
    `INSERT INTO study_questions (study_id, question_id, source, idx, domain, question, answer, options)
     SELECT $1, t.id, $2, t.idx, t.domain, t.question, t.answer, t.options
       FROM unnest($3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::jsonb[])
            AS t(id, idx, domain, question, answer, options)
     ON CONFLICT DO NOTHING`,
    [
      input.studyId,
      input.source,
      valid.map((q) => qid(q.id)),
      valid.map((_, i) => i),
      valid.map((q) => q.domain),
      valid.map((q) => q.question),
      valid.map((q) => q.answer),
      valid.map((q) => (q.options ? JSON.stringify(q.options) : null)),
    ],
  );
  await pool.query(
    `INSERT INTO study_question_rejections (study_id, source, line, reason)
     SELECT $1, $2, t.line, t.reason FROM unnest($3::int[], $4::text[]) AS t(line, reason)
     ON CONFLICT DO NOTHING`,
    [input.studyId, input.source, refused.map((r) => r.line), refused.map((r) => r.reason)],
  );
  const rejectedByReason: Record<string, number> = {};
  for (const r of refused) rejectedByReason[r.reason] = (rejectedByReason[r.reason] ?? 0) + 1;
  const domains: Record<string, number> = {};
  for (const q of valid) domains[q.domain] = (domains[q.domain] ?? 0) + 1;
  return { loaded: valid.length, rejected: refused.length, rejectedByReason, domains };
}

interface QuestionRow {
  question_id: string;
  domain: string;
  question: string;
  answer: string;
  options: string[] | null;
}

const toQuestion = (row: QuestionRow): StudyQuestion => ({
  questionId: row.question_id,
  domain: row.domain,
  question: row.question,
  answer: row.answer,
  options: row.options,
});

/** The questions of one source, in order. */
export async function questionsOf(
  pool: pg.Pool,
  studyId: string,
  source: 'seed' | 'test' | 'evolved',
): Promise<StudyQuestion[]> {
  const { rows } = await pool.query<QuestionRow>(
    `SELECT question_id, domain, question, answer, options FROM study_questions
      WHERE study_id = $1 AND source = $2 ORDER BY idx`,
    [studyId, source],
  );
  return rows.map(toQuestion);
}

/** Questions of every source in source and file order: all of them, or those of `ids`. */
export async function studyQuestions(
  pool: pg.Pool,
  studyId: string,
  ids?: readonly string[],
): Promise<StudyQuestion[]> {
  const { rows } = await pool.query<QuestionRow>(
    `SELECT question_id, domain, question, answer, options FROM study_questions
      WHERE study_id = $1 AND ($2::text[] IS NULL OR question_id = ANY($2)) ORDER BY source, idx`,
    [studyId, ids ?? null],
  );
  return rows.map(toQuestion);
}

/** One question; a missing one is a bug in the caller, not a retryable condition. */
export async function questionById(
  pool: pg.Pool,
  studyId: string,
  questionId: string,
): Promise<StudyQuestion> {
  const { rows } = await pool.query<QuestionRow>(
    `SELECT question_id, domain, question, answer, options FROM study_questions
      WHERE study_id = $1 AND question_id = $2`,
    [studyId, questionId],
  );
  if (!rows[0]) throw new StudyInputError(studyId, `it has no question ${questionId}`);
  return toQuestion(rows[0]);
}
