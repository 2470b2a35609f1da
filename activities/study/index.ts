/**
 * The scaling-study activities (seed 002): questions in, teacher streams sampled and judged,
 * protocol derivations, cell data sets for the trainer, mean@k evaluation, the fitted report.
 * Inputs and outputs are small JSON; questions, responses and verdicts stay in PostgreSQL.
 */
import { heartbeatProgress } from '../heartbeat.js';
import type { ModelClient } from '../llm/index.js';
import { getPool } from '../store/db.js';
import { loadPersonas } from '../synthesis/personas.js';
import { buildCellDataset, type BuildCellDatasetInput } from './cell-dataset.js';
import { finishedCells, recordCellTrained, startCell } from './cells.js';
import { selectByEmbedding, type SelectByEmbeddingInput } from './embedding-selection.js';
import { evaluateCell, type EvaluateCellInput } from './evaluate.js';
import { evolveQuestion, type EvolveQuestionInput } from './evolve.js';
import type { Cell } from './grid.js';
import { loadQuestions } from './questions.js';
import { studyJudgeStanding } from './judge-standing.js';
import { repairQuestion, type RepairQuestionInput } from './repair.js';
import { writeStudyReport } from './report.js';
import { sampleQuestion, type SampleQuestionInput } from './sampling.js';

/** Personas beyond this many are not loaded for the persona protocol. */
const MAX_PERSONAS = 100_000;

export function createStudyActivities(databaseUrl: string, models: ModelClient) {
  const pool = () => getPool(databaseUrl);
  return {
    /** Loads the seed pool, the test set and (persona protocol) the personas. Idempotent. */
    async prepareStudy(input: { studyId: string; seedPool: string; testSet: string; personas?: string }) {
      const seed = await loadQuestions(pool(), {
        studyId: input.studyId,
        source: 'seed',
        path: input.seedPool,
      });
      const test = await loadQuestions(pool(), {
        studyId: input.studyId,
        source: 'test',
        path: input.testSet,
      });
      const personas = input.personas
        ? await loadPersonas(pool(), {
            runId: input.studyId,
            path: input.personas,
            offset: 0,
            limit: MAX_PERSONAS,
          })
        : undefined;
      return { seed, test, personas };
    },

    /** One page of question ids of a source, in order. */
    async listQuestionIds(input: {
      studyId: string;
      source: 'seed' | 'test' | 'evolved';
      offset: number;
      limit: number;
    }) {
      const { rows } = await pool().query<{ question_id: string }>(
        `SELECT question_id FROM study_questions WHERE study_id = $1 AND source = $2
          ORDER BY idx OFFSET $3 LIMIT $4`,
        [input.studyId, input.source, input.offset, input.limit],
      );
      return rows.map((r) => r.question_id);
    },

    /** Rejection sampling of one question on one stream; resumable, nothing sampled twice. */
    async sampleQuestion(input: SampleQuestionInput) {
      return sampleQuestion(models, pool(), input, heartbeatProgress);
    },

    /** Evolve-Instruct candidates of one seed question, filtered for format and similarity. */
    async evolveQuestion(input: EvolveQuestionInput) {
      return evolveQuestion(models, pool(), input);
    },

    /** Trace repair of the wrong RS attempts of one question. */
    async repairQuestion(input: RepairQuestionInput) {
      return repairQuestion(models, pool(), input);
    },

    /** Embedding-based selection order of one question's accepted RS responses. */
    async selectByEmbedding(input: SelectByEmbeddingInput) {
      return selectByEmbedding(pool(), input);
    },

    /** Registers a cell; a cell already evaluated comes back with its result. */
    async startCell(input: { studyId: string; cell: Cell }) {
      return startCell(pool(), input.studyId, input.cell);
    },

    /** A cell's SFT set and its trainer batches in PostgreSQL; returns counts and steps. */
    async buildCellDataset(input: BuildCellDatasetInput) {
      return buildCellDataset(pool(), input);
    },

    async recordCellTrained(input: {
      studyId: string;
      cellId: string;
      steps: number;
      metrics: Record<string, unknown>;
    }) {
      return recordCellTrained(pool(), input);
    },

    /** mean@k of a cell's final checkpoint; resumable, nothing sampled or judged twice. */
    async evaluateCell(input: EvaluateCellInput) {
      return evaluateCell(models, pool(), input, (done, total) => heartbeatProgress({ done, total }));
    },

    async finishedCells(input: { studyId: string }) {
      return finishedCells(pool(), input.studyId);
    },

    /** Whether the study's judge can be believed so far (its controls) and which roles are toys. */
    async checkStudyJudge(input: { studyId: string }) {
      return studyJudgeStanding(pool(), input.studyId);
    },

    /** Fits and writes report.md and the SVG plots from the evaluated cells. */
    async writeStudyReport(input: { studyId: string }) {
      return writeStudyReport(pool(), input.studyId);
    },
  };
}
