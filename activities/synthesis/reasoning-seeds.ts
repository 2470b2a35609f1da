import type pg from 'pg';
import { SeedProblemSchema, type SeedProblem } from '../../schemas/reasoning-synthesis.js';
import { resolveDataFile } from '../data-files.js';
import { PersonaFileError } from './errors.js';
import { readCheckedLines, type CheckedLines } from './checked-lines.js';

/** Longest seed line read, in bytes; longer lines are refused without being held in memory. */
export const MAX_SEED_LINE_BYTES = 64 * 1024;

/** The id of problem `idx` of a run: its row's key and the ledger run id of its model calls. */
export const problemIdOf = (runId: string, idx: number) => `${runId}/problem-${String(idx).padStart(5, '0')}`;

/** What the seed loader is asked for. */
export interface LoadSeedsInput {
  readonly runId: string;
  readonly path: string;
  readonly offset: number;
  /** Valid problems wanted after the offset. */
  readonly limit: number;
}

/** What was loaded: counts only, the problems stay in PostgreSQL. */
export interface LoadSeedsResult {
  readonly loaded: number;
  readonly rejected: number;
  readonly rejectedByReason: Record<string, number>;
}

/** The reason a seed line is refused, or the problem it holds. */
function checkSeedLine(text: string) {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  const parsed = SeedProblemSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return `${issue.path.join('.') || 'line'}: ${issue.message}`;
  }
  // PostgreSQL text cannot hold NUL.
  if (`${parsed.data.question}${parsed.data.answer ?? ''}`.includes('\u0000')) return 'NUL character';
  return parsed.data;
}

/**
 * Reads a seed JSONL file into `reasoning_problems` (valid lines, in order) and records every
 * refused line with its reason in `reasoning_seed_rejections`. Idempotent: a retry inserts nothing new.
 */
export async function loadReasoningSeeds(pool: pg.Pool, input: LoadSeedsInput): Promise<LoadSeedsResult> {
  const file = resolveDataFile(input.path, 'reasoning seed problems');
  let read: CheckedLines<SeedProblem>;
  try {
    read = await readCheckedLines(file, {
      offset: input.offset,
      limit: input.limit,
      maxLineBytes: MAX_SEED_LINE_BYTES,
      check: checkSeedLine,
    });
  } catch (error) {
    throw new PersonaFileError(file, (error as Error).message, 'reasoning seed problems');
  }
  const chosen = read.chosen.map(({ line, value }) => ({
    line,
    kind: value.kind,
    question: value.question,
    answer: value.answer ?? null,
  }));
  const { refused, rejected, rejectedByReason } = read;
  await pool.query(
    `INSERT INTO reasoning_problems (problem_id, run_id, idx, line, kind, source_question, source_answer)
     SELECT t.problem_id, $1, t.idx, t.line, t.kind, t.question, t.answer
       FROM unnest($2::text[], $3::int[], $4::int[], $5::text[], $6::text[], $7::text[])
            AS t(problem_id, idx, line, kind, question, answer)
     ON CONFLICT DO NOTHING`,
    [
      input.runId,
      chosen.map((_, i) => problemIdOf(input.runId, i)),
      chosen.map((_, i) => i),
      chosen.map((p) => p.line),
      chosen.map((p) => p.kind),
      chosen.map((p) => p.question),
      chosen.map((p) => p.answer),
    ],
  );
  await pool.query(
    `INSERT INTO reasoning_seed_rejections (run_id, line, reason)
     SELECT $1, t.line, t.reason FROM unnest($2::int[], $3::text[]) AS t(line, reason)
     ON CONFLICT DO NOTHING`,
    [input.runId, refused.map((r) => r.line), refused.map((r) => r.reason)],
  );
  return { loaded: chosen.length, rejected, rejectedByReason };
}
