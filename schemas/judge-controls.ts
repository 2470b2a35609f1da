/**
 * A spec's judge controls (issue 36): items whose verdict is known, graded by the run's LLM judge
 * beside the real ones, and what to do when it gets too many of them wrong. One shape for every
 * run kind whose figures rest on a judge.
 */
import { z } from 'zod';

/** The control pass rate below which a judge is unreliable, unless a spec says otherwise. */
export const DEFAULT_MIN_PASS_RATE = 0.9;

const minPassRate = (controlled: string) =>
  z
    .number()
    .min(0)
    .max(1)
    .default(DEFAULT_MIN_PASS_RATE)
    .describe(
      `Share of control items (${controlled}) the judge must grade right; below it the run is marked ` +
        'judge unreliable.',
    );

const DESCRIPTION = 'Controls graded beside the real items, so a judge that cannot be believed shows.';

/** The `judgeControls` field of a run that can pause itself `pauseWhen` for an unreliable judge. */
export function judgeControlsSchema(controlled: string, pauseWhen: string) {
  return z
    .object({
      minPassRate: minPassRate(controlled),
      onUnreliable: z
        .enum(['mark', 'pause'])
        .default('mark')
        .describe(
          'mark: say so in the summary, report, viewer and Temporal UI; pause: also pause the run ' +
            `${pauseWhen}, naming why (resume to go on).`,
        ),
    })
    .strict()
    .default({ minPassRate: DEFAULT_MIN_PASS_RATE, onUnreliable: 'mark' })
    .describe(DESCRIPTION);
}

/** The `judgeControls` field of a run that marks an unreliable judge and goes on. */
export function markedJudgeControlsSchema(controlled: string) {
  return z
    .object({ minPassRate: minPassRate(controlled) })
    .strict()
    .default({ minPassRate: DEFAULT_MIN_PASS_RATE })
    .describe(`${DESCRIPTION} The run is marked, never paused: its judge calls are graded as it goes.`);
}

export type JudgeControls = z.infer<ReturnType<typeof judgeControlsSchema>>;

/** Controls graded and passed; `passRate` null when none was graded. */
export interface ControlTally {
  readonly controls: number;
  readonly passed: number;
  readonly passRate: number | null;
}

/** The tally of `controls` graded controls of which `passed` passed. */
export function controlTally(controls: number, passed: number): ControlTally {
  return { controls, passed, passRate: controls > 0 ? passed / controls : null };
}

/** Several judges' controls as one tally. */
export function sumTallies(...tallies: readonly ControlTally[]): ControlTally {
  return controlTally(
    tallies.reduce((n, t) => n + t.controls, 0),
    tallies.reduce((n, t) => n + t.passed, 0),
  );
}

/** The judge's standing in a run's metrics and summary. */
export interface JudgeStanding {
  readonly controlPassRate: number;
  readonly minPassRate: number;
  readonly unreliable: boolean;
  /** Why, when unreliable: what the summary, report, viewer and Temporal UI say. */
  readonly reason: string | null;
}

const percent = (rate: number) => `${(100 * rate).toFixed(0)}%`;

/**
 * The standing of a judge from its controls so far; undefined when it graded none (no judge was
 * asked, or a history from before controls existed). `figures` names what rests on the judge,
 * `judgeField` the spec field that names a stronger one.
 */
export function judgeStanding(
  tally: ControlTally | undefined,
  minPassRate: number,
  figures: string,
  items = 'control transcripts',
  judgeField = 'judge.endpoint',
): JudgeStanding | undefined {
  if (!tally || tally.passRate === null) return undefined;
  const unreliable = tally.passRate < minPassRate;
  const reason = unreliable
    ? `judge unreliable: it graded ${tally.passed} of ${tally.controls} ${items} right ` +
      `(${percent(tally.passRate)}, below ${percent(minPassRate)}), so its ${figures} cannot be ` +
      `believed; give the run a stronger judge (${judgeField})`
    : null;
  return { controlPassRate: tally.passRate, minPassRate, unreliable, reason };
}

/** The standing in one line, for a report or a page: the reason, or the pass rate that clears it. */
export function standingLine(standing: JudgeStanding): string {
  return (
    standing.reason ??
    `judge controls: ${percent(standing.controlPassRate)} passed (at least ${percent(standing.minPassRate)} needed)`
  );
}
