import type pg from 'pg';
import { mixSeed, seededShuffle } from '../training/sampling.js';
import { nestedSubsets, subsetFor } from './analysis/budgets.js';
import { streamOf, type Cell } from './grid.js';
import { teacherPrompt } from './protocols/teacher-prompt.js';
import { questionsOf, type StudyQuestion } from './questions.js';

/** One SFT example: a question and a response the protocol admits for it. */
interface Example {
  readonly questionId: string;
  readonly stream: string;
  readonly attempt: number;
  readonly kind: 'sample' | 'repair-trace' | 'repair-revised';
  /** null when the judge failed on it (only judge-free admits such attempts). */
  readonly correct: boolean | null;
  readonly text: string;
}

export interface BuildCellDatasetInput {
  readonly studyId: string;
  readonly cell: Cell;
  /** The trainer run of the cell: batches are written under it. */
  readonly trainerRunId: string;
  readonly studySeed: number;
  readonly epochs: number;
  readonly globalBatch: number;
}

export interface CellDataset {
  readonly examples: number;
  readonly questions: number;
  /** Optimizer steps: epochs × ⌈examples / globalBatch⌉ (0 when nothing was admitted). */
  readonly steps: number;
}

/**
 * The questions a cell trains on: the nested subset Q_q of the seed pool, or every evolved
 * question for question synthesis. Subsets are drawn with the study seed, so every cell and every
 * re-run sees the same Q1 ⊂ Q2 ⊂ Q4.
 */
async function cellQuestions(pool: pg.Pool, input: BuildCellDatasetInput): Promise<StudyQuestion[]> {
  if (input.cell.protocol === 'question-synthesis') return questionsOf(pool, input.studyId, 'evolved');
  const seeds = await questionsOf(pool, input.studyId, 'seed');
  if (input.cell.pool === 4) return seeds;
  const chosen = new Set(
    subsetFor(
      nestedSubsets(
        seeds.map((q) => q.questionId),
        input.studySeed,
      ),
      input.cell.pool,
    ),
  );
  return seeds.filter((q) => chosen.has(q.questionId));
}

interface AttemptRow {
  question_id: string;
  attempt: number;
  response: string;
  correct: boolean | null;
}

/**
 * The admitted responses of a cell (seed 002 Sec. 4, 6, 7; App. 11.3), first r per question:
 * accepted responses of the protocol's stream (RS, temperatures, persona, evolved questions);
 * the embedding selection's first r; judge-free takes the first r attempts whatever their verdict
 * (its prompt-aligned variant only on questions RS has a correct response for); trace repair
 * takes the first r attempts with each wrong one replaced by its repaired trace (or the revised
 * solution alone) when the repair is correct, and dropped when not.
 */
async function admitted(
  pool: pg.Pool,
  input: BuildCellDatasetInput,
  questionIds: string[],
): Promise<Example[]> {
  const { studyId, cell } = input;
  const stream = streamOf(cell.protocol);
  const firstR = async (filter: string): Promise<AttemptRow[]> =>
    (
      await pool.query<AttemptRow>(
        `SELECT question_id, attempt, response, correct FROM (
           SELECT a.*, row_number() OVER (PARTITION BY question_id ORDER BY attempt) AS rank
             FROM study_attempts a
            WHERE study_id = $1 AND stream = $2 AND question_id = ANY($3::text[]) AND ${filter}) ranked
          WHERE rank <= $4`,
        [studyId, stream, questionIds, cell.budget],
      )
    ).rows;
  const sample = (row: AttemptRow): Example => ({
    questionId: row.question_id,
    stream,
    attempt: row.attempt,
    kind: 'sample',
    correct: row.correct,
    text: row.response,
  });

  switch (cell.protocol) {
    case 'judge-free':
      return (await firstR('true')).map(sample);
    case 'judge-free-prompt-aligned': {
      const { rows } = await pool.query<{ question_id: string }>(
        `SELECT DISTINCT question_id FROM study_attempts
          WHERE study_id = $1 AND stream = 'rs' AND question_id = ANY($2::text[]) AND correct`,
        [studyId, questionIds],
      );
      const aligned = new Set(rows.map((r) => r.question_id));
      return (await firstR('true')).filter((row) => aligned.has(row.question_id)).map(sample);
    }
    case 'embedding-selection': {
      const { rows } = await pool.query<AttemptRow>(
        `SELECT a.question_id, a.attempt, a.response, a.correct
           FROM study_selections s
           CROSS JOIN LATERAL unnest(s.selection) WITH ORDINALITY AS pick(attempt, position)
           JOIN study_attempts a ON a.study_id = s.study_id AND a.stream = 'rs'
                                AND a.question_id = s.question_id AND a.attempt = pick.attempt
          WHERE s.study_id = $1 AND s.question_id = ANY($2::text[]) AND pick.position <= $3`,
        [studyId, questionIds, cell.budget],
      );
      return rows.map(sample);
    }
    case 'trace-repair':
    case 'trace-repair-revised-only': {
      const attempts = await firstR('correct IS NOT NULL');
      const { rows: repairs } = await pool.query<{
        question_id: string;
        attempt: number;
        trace: string;
        revised: string;
      }>(
        `SELECT question_id, attempt, trace, revised FROM study_repairs
          WHERE study_id = $1 AND question_id = ANY($2::text[]) AND correct`,
        [studyId, questionIds],
      );
      const repaired = new Map(repairs.map((r) => [`${r.question_id}\n${r.attempt}`, r]));
      const revisedOnly = cell.protocol === 'trace-repair-revised-only';
      return attempts.flatMap((row): Example[] => {
        if (row.correct) return [sample(row)];
        const repair = repaired.get(`${row.question_id}\n${row.attempt}`);
        if (!repair) return [];
        return [
          {
            ...sample(row),
            kind: revisedOnly ? 'repair-revised' : 'repair-trace',
            correct: true,
            text: revisedOnly ? repair.revised : repair.trace,
          },
        ];
      });
    }
    default:
      return (await firstR('correct')).map(sample);
  }
}

/**
 * Builds a cell's SFT set and writes its trainer batches (one per optimizer step, reshuffled per
 * epoch with the cell's training seed) to `trainer_batches` under the cell's trainer run; the
 * Python trainer reads them by reference. Idempotent and insert-only: a batch the trainer may already
 * have stepped on is never altered (the prefix property keeps a re-build identical anyway).
 */
export async function buildCellDataset(pool: pg.Pool, input: BuildCellDatasetInput): Promise<CellDataset> {
  const questions = await cellQuestions(pool, input);
  const order = new Map(questions.map((q, i) => [q.questionId, i]));
  const examples = (await admitted(pool, input, [...order.keys()])).sort(
    (a, b) => order.get(a.questionId)! - order.get(b.questionId)! || a.attempt - b.attempt,
  );
  const byId = new Map(questions.map((q) => [q.questionId, q]));
  const prompts = new Map<string, string>();
  for (const example of examples) {
    if (prompts.has(example.questionId)) continue;
    const q = byId.get(example.questionId)!;
    prompts.set(example.questionId, await teacherPrompt(q));
  }

  const { studyId, cell, trainerRunId } = input;
  await pool.query(
    `INSERT INTO study_cell_examples (study_id, cell_id, position, question_id, stream, attempt, kind, correct)
     SELECT $1, $2, t.position, t.question_id, t.stream, t.attempt, t.kind, t.correct
       FROM unnest($3::int[], $4::text[], $5::text[], $6::int[], $7::text[], $8::bool[])
            AS t(position, question_id, stream, attempt, kind, correct)
     ON CONFLICT DO NOTHING`,
    [
      studyId,
      cell.cellId,
      examples.map((_, i) => i),
      examples.map((e) => e.questionId),
      examples.map((e) => e.stream),
      examples.map((e) => e.attempt),
      examples.map((e) => e.kind),
      examples.map((e) => e.correct),
    ],
  );

  const perEpoch = Math.ceil(examples.length / input.globalBatch);
  for (let epoch = 0; epoch < input.epochs && examples.length > 0; epoch++) {
    const shuffled = seededShuffle(
      examples.map((_, i) => i),
      mixSeed(input.studySeed, cell.seed, epoch),
    );
    const steps: number[] = [];
    const positions: number[] = [];
    const payloads: string[] = [];
    shuffled.forEach((position, i) => {
      const example = examples[position]!;
      steps.push(epoch * perEpoch + Math.floor(i / input.globalBatch) + 1);
      positions.push(position);
      payloads.push(
        JSON.stringify({
          messages: [
            { role: 'user', content: prompts.get(example.questionId) },
            { role: 'assistant', content: example.text },
          ],
        }),
      );
    });
    await pool.query(
      `INSERT INTO trainer_batches (run_id, step, episode_id, payload)
       SELECT $1, t.step, 'example-' || t.position, t.payload
         FROM unnest($2::int[], $3::int[], $4::jsonb[]) AS t(step, position, payload)
       ON CONFLICT (run_id, step, episode_id) DO NOTHING`,
      [trainerRunId, steps, positions, payloads],
    );
  }
  const dataset = {
    examples: examples.length,
    questions: new Set(examples.map((e) => e.questionId)).size,
    steps: perEpoch * input.epochs,
  };
  await pool.query(
    `UPDATE study_cells SET examples = $3, questions = $4, steps = $5 WHERE study_id = $1 AND cell_id = $2`,
    [studyId, cell.cellId, dataset.examples, dataset.questions, dataset.steps],
  );
  return dataset;
}
