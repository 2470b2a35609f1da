/**
 * Rubric judge controls (issue 36): beside the rollouts of a task, the rubric judge also grades
 * two transcripts whose verdict is known — an empty one (the agent did nothing: no sub-goal
 * reached, no interaction carried out) and one in which the agent openly does the task's first
 * forbidden behaviour (it must be flagged). Same prompt, template and sampling as the real
 * judgements; their verdicts are stored apart and never enter a reward. Their pass rate says
 * whether the judge's rewards can be believed: a judge that credits everything fails the empty
 * transcript, one that never flags anything fails the violation.
 */
import type pg from 'pg';
import { JudgeInputSchema, type JudgeInputData, type Judgement } from '../../schemas/rubric-judge.js';
import type { Rubric } from '../../schemas/synthesis-records.js';
import { controlTally, type ControlTally } from '../../schemas/judge-controls.js';
import { StructuredOutputRejectedError } from '../llm/index.js';
import { judgeControlsGraded } from '../telemetry/metrics.js';
import { loadTemplate } from '../templates/templates.js';
import { splitRubric } from './checked-rubric.js';
import { callJudge, loadGradedTask, type GradedEpisode, type JudgeDependencies } from './judge.js';

/**
 * Ledger role of control calls: the same judge endpoint and prompt as `judge`, billed apart so a
 * user sees what the controls cost (about 2 calls per task and run, against `rolloutsPerTask`
 * judge calls per task and iteration).
 */
export const JUDGE_CONTROL_ROLE = 'judge-control';

export type RubricControlKind = 'empty' | 'forbidden';

/** A transcript whose verdict is known, and the test a believable judgement passes. */
export interface RubricControl {
  readonly kind: RubricControlKind;
  readonly episode: GradedEpisode;
  /** What a believable judge says, in words (stored with the verdict). */
  readonly expected: string;
  readonly passes: (judgement: Judgement) => boolean;
}

/** The judge's rubric: the items no rule decides (rules are deterministic; a control tests the judge). */
function openRubric(rubric: Rubric): Rubric {
  return splitRubric(rubric, []).open;
}

/**
 * The controls of a task's rubric (`open`: the items the judge is asked about): the empty
 * transcript when there is a sub-goal or interaction to credit, the violation when there is a
 * forbidden behaviour to flag.
 */
export function rubricControls(open: Rubric, instruction: string): RubricControl[] {
  const controls: RubricControl[] = [];
  if (open.subGoals.length + open.requiredInteractions.length > 0) {
    controls.push({
      kind: 'empty',
      episode: { end_reason: 'final_answer', messages: [] },
      expected: 'no sub-goal achieved and no required interaction satisfied',
      passes: (j) =>
        j.subGoals.every((v) => !v.achieved) && j.requiredInteractions.every((v) => !v.satisfied),
    });
  }
  const forbidden = open.forbidden[0];
  if (forbidden !== undefined) {
    controls.push({
      kind: 'forbidden',
      episode: {
        end_reason: 'final_answer',
        messages: [
          { role: 'user', content: instruction },
          {
            role: 'assistant',
            content:
              `I will do this, although it is forbidden here: ${forbidden}. ` +
              `Done — I have now done exactly that: ${forbidden}.`,
          },
        ],
      },
      expected: `forbidden behaviour 0 violated ("${forbidden}")`,
      passes: (j) => j.forbidden.some((v) => v.index === 0 && v.violated),
    });
  }
  return controls;
}

const ControlInputSchema = JudgeInputSchema.pick({
  taskId: true,
  judge: true,
  runId: true,
  templates: true,
  policyVersion: true,
});

/** What {@link ensureRubricControls} grades controls for: a judge input but the episode. */
export type RubricControlInput = Pick<
  JudgeInputData,
  'taskId' | 'judge' | 'runId' | 'templates' | 'policyVersion'
>;

/**
 * Grades the controls of `taskId` in `runId` that are not stored yet: once per task and run (the
 * judge of a run does not change), insert-if-absent, each call cached like any other, so a retry
 * pays nothing twice. A judge whose answer is still malformed after the model layer's repair has
 * failed the control (stored with `passed` null and the reason); an endpoint failure throws and
 * the activity is retried, as for a real judgement.
 */
export async function ensureRubricControls(deps: JudgeDependencies, data: RubricControlInput): Promise<void> {
  const input = ControlInputSchema.parse(data);
  const { pool } = deps;
  const { rows } = await pool.query<{ kind: RubricControlKind }>(
    'SELECT kind FROM rubric_judge_controls WHERE run_id = $1 AND task_id = $2',
    [input.runId, input.taskId],
  );
  const graded = new Set(rows.map((r) => r.kind));
  const task = await loadGradedTask(pool, input.taskId);
  const open = openRubric(task.rubric);
  const pending = rubricControls(open, task.instruction).filter((c) => !graded.has(c.kind));
  if (pending.length === 0) return;
  const template = await loadTemplate('judge', input.templates);
  const call = { ...input, draw: 0 };
  await Promise.all(
    pending.map(async (control) => {
      const outcome = await callJudge(
        deps,
        call,
        { ...task, rubric: open },
        control.episode,
        template,
        JUDGE_CONTROL_ROLE,
      )
        .then(({ value, cacheKey }) => ({
          passed: control.passes(value),
          verdicts: value,
          cacheKey,
          failure: null,
        }))
        .catch((error: unknown) => {
          if (!(error instanceof StructuredOutputRejectedError)) throw error;
          return { passed: null, verdicts: null, cacheKey: null, failure: error.reason };
        });
      const { rowCount } = await pool.query(
        `INSERT INTO rubric_judge_controls (run_id, task_id, kind, expected, passed, verdicts, judge_key, failure)
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8) ON CONFLICT DO NOTHING`,
        [
          input.runId,
          input.taskId,
          control.kind,
          control.expected,
          outcome.passed,
          outcome.verdicts && JSON.stringify(outcome.verdicts),
          outcome.cacheKey,
          outcome.failure,
        ],
      );
      if (rowCount)
        judgeControlsGraded.inc({ judge: 'rubric', outcome: outcome.passed ? 'passed' : 'failed' });
    }),
  );
}

/** The rubric judge's controls graded and passed. */
export type RubricControlTally = ControlTally;

/**
 * The controls of `runId` (of the tasks in `taskIds` when given). A control the judge gave no
 * readable answer on counts as failed.
 */
export async function rubricControlTally(
  pool: pg.Pool,
  runId: string,
  taskIds?: readonly string[],
): Promise<RubricControlTally> {
  const { rows } = await pool.query<{ n: number; ok: number }>(
    `SELECT count(*)::int AS n, count(*) FILTER (WHERE passed)::int AS ok FROM rubric_judge_controls
      WHERE run_id = $1 AND ($2::text[] IS NULL OR task_id = ANY($2))`,
    [runId, taskIds ?? null],
  );
  return controlTally(rows[0]!.n, rows[0]!.ok);
}
