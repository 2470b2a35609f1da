/**
 * Whether a study's figures can be believed (issue 36): the judge's control pass rate against
 * the spec's threshold, and a label for every role played by a toy — the embedded 135M model or a
 * tiny random student — wherever its figures are shown.
 */
import type pg from 'pg';
import { embeddedModelUrl, loadEnvironment } from '../../schemas/environment.js';
import type { ModelEndpoint } from '../../schemas/model-endpoint.js';
import { EMBEDDED_MODEL_NAME, EMBEDDED_TOY, resolveEndpoint } from '../llm/default-endpoint.js';
import { judgeCheck, type JudgeCheck } from './judge-controls.js';

/** The threshold of studies recorded before judge controls existed. */
const DEFAULT_MIN_PASS_RATE = 0.9;

export interface JudgeStanding extends JudgeCheck {
  readonly minPassRate: number;
  /** The judge decided verdicts here and failed its controls. */
  readonly unreliable: boolean;
  /** Why, when unreliable: what to say wherever the study's figures are shown. */
  readonly reason: string | null;
  /** One line per role played by a toy model, e.g. `judge: embedded SmolLM2-135M (toy): ...`. */
  readonly toyLabels: readonly string[];
}

/** The parts of a stored ScalingStudy spec this reads (older studies lack judgeControls). */
interface StoredStudySpec {
  teacher?: { endpoint?: ModelEndpoint };
  judge?: { endpoint?: ModelEndpoint };
  student?: { base?: { kind?: string } };
  judgeControls?: { minPassRate?: number };
}

function isEmbedded(endpoint: ModelEndpoint | undefined): boolean {
  const resolved = resolveEndpoint(endpoint);
  return resolved.model === EMBEDDED_MODEL_NAME || resolved.baseUrl === embeddedModelUrl(loadEnvironment());
}

const percent = (rate: number) => `${(100 * rate).toFixed(0)}%`;

/** The study's standing; `cellId` narrows the judge check to one cell's evaluation. */
export async function studyJudgeStanding(
  pool: pg.Pool,
  studyId: string,
  cellId?: string,
): Promise<JudgeStanding> {
  const { rows } = await pool.query<{ spec: StoredStudySpec }>('SELECT spec FROM runs WHERE run_id = $1', [
    studyId,
  ]);
  const spec = rows[0]?.spec ?? {};
  const check = await judgeCheck(pool, studyId, cellId);
  const minPassRate = spec.judgeControls?.minPassRate ?? DEFAULT_MIN_PASS_RATE;
  const asked = check.decidedBy.judge + check.decidedBy.judgeFailed;
  const unreliable = check.controlPassRate !== null && check.controlPassRate < minPassRate;
  const reason = unreliable
    ? `judge unreliable: it graded ${check.controlsPassed} of ${check.controls} control answers right ` +
      `(${percent(check.controlPassRate!)}, below ${percent(minPassRate)}), so its ${asked} verdicts ` +
      'cannot be believed; give the study a stronger judge (judge.endpoint)'
    : null;

  const toyLabels: string[] = [];
  if (isEmbedded(spec.judge?.endpoint) && asked > 0 && (check.controlPassRate ?? 0) < minPassRate)
    toyLabels.push(`judge: ${EMBEDDED_TOY}: the ${asked} verdicts it gave are not meaningful`);
  if (isEmbedded(spec.teacher?.endpoint))
    toyLabels.push(`teacher: ${EMBEDDED_TOY}: the training data it wrote is not meaningful`);
  if (spec.student?.base?.kind === 'tiny')
    toyLabels.push(
      'student: a tiny randomly initialized model (toy): its scores test the pipeline, not a method',
    );
  return { ...check, minPassRate, unreliable, reason, toyLabels };
}

/** Markdown lines of a standing, for the top of a report. */
export function standingMarkdown(standing: JudgeStanding): string {
  const { decidedBy, controls, controlsPassed, controlPassRate } = standing;
  const total = decidedBy.checker + decidedBy.judge + decidedBy.judgeFailed;
  const share = (n: number) => (total === 0 ? '—' : `${n} (${((100 * n) / total).toFixed(1)}%)`);
  const lines = ['', '## Can these figures be believed?', ''];
  if (standing.reason) lines.push(`> **${standing.reason}.**`, '');
  for (const label of standing.toyLabels) lines.push(`> **Toy figures.** ${label}.`, '');
  lines.push(
    '| verdicts decided by | count |',
    '| --- | ---: |',
    `| the deterministic checker | ${share(decidedBy.checker)} |`,
    `| the LLM judge | ${share(decidedBy.judge)} |`,
    `| nobody: judge failed (never scored) | ${share(decidedBy.judgeFailed)} |`,
    '',
    controlPassRate === null
      ? 'Judge controls: none graded — the LLM judge decided no verdict, so none was needed.'
      : `Judge controls: ${controlsPassed} of ${controls} passed (${percent(controlPassRate)}; ` +
          `threshold ${percent(standing.minPassRate)}): each judged question's reference must be ` +
          'CORRECT and a wrong answer INCORRECT. Controls never enter a score.',
  );
  return `${lines.join('\n')}\n`;
}

/** A standing in one line, and its toy roles `; `-separated: what the run summary records. */
export function standingSummary(standing: JudgeStanding): { judge: string; toyFigures?: string } {
  const { decidedBy, controls, controlsPassed, controlPassRate, minPassRate } = standing;
  const controlText =
    controlPassRate === null
      ? 'no controls needed'
      : `${controlsPassed} of ${controls} controls passed (${percent(controlPassRate)}; threshold ${percent(minPassRate)})`;
  const judge =
    `${standing.unreliable ? 'UNRELIABLE' : 'ok'}: ${controlText}; verdicts by checker ${decidedBy.checker}, ` +
    `by judge ${decidedBy.judge}, judge failed ${decidedBy.judgeFailed}`;
  return standing.toyLabels.length ? { judge, toyFigures: standing.toyLabels.join('; ') } : { judge };
}
