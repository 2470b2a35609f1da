import type pg from 'pg';
import {
  JUDGEMENT_SCHEMA_NAME,
  JudgeInputSchema,
  judgementSchema,
  type JudgeInput,
  type JudgeInputData,
  type Judgement,
} from '../../schemas/rubric-judge.js';
import { misalignedChecks } from '../../schemas/rubric-rules.js';
import { RubricSchema, type Rubric } from '../../schemas/synthesis-records.js';
import type { ModelClient } from '../llm/index.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import { RowVanishedError } from '../store/errors.js';
import { renderTranscript } from '../synthesis/transcript.js';
import { loadTemplate, renderTemplate } from '../templates/templates.js';
import { EpisodeNotGradableError, UngradableRubricError } from './errors.js';
import { rubricReward, type RubricReward } from './reward.js';
import { truncationNote } from './truncation-note.js';
import { verdictsOf } from './verdicts.js';
import { mergeVerdicts, needsJudge, splitRubric, type CheckedJudgement } from './checked-rubric.js';

/** Ledger role of the judge's calls (and the `X-Mockworld-Role` the test model server sees). */
export const JUDGE_ROLE = 'judge';

/** `judge_model` of a judgement whose every item a rule decided: no judge model was called. */
export const RULES_ONLY_JUDGE = 'rules';

const SYSTEM_PROMPT =
  'You are a strict, impartial grader of AI assistant transcripts. You check each rubric item ' +
  'against what the transcript shows and answer with JSON only.';

/** The small result of judging an episode; the verdicts stay in `judgements`. */
export interface JudgementSummary {
  readonly episodeId: string;
  /** R(τ) of seed eq. 5, in [0, 1]. */
  readonly reward: number;
  /** Fraction of sub-goals achieved; null when the rubric has none. */
  readonly subGoalFraction: number | null;
  /** Fraction of required interactions satisfied; null when the rubric requires none. */
  readonly interactionFraction: number | null;
  /** True when any forbidden behaviour was violated (then the reward is 0). */
  readonly forbiddenViolated: boolean;
}

/** What {@link judgeEpisode} needs from the worker process. */
export interface JudgeDependencies {
  /** PostgreSQL holding `tasks`, `episodes` and `judgements` (migrated). */
  readonly pool: pg.Pool;
  /** The model client; a repeated judge call is served from its cache. */
  readonly models: ModelClient;
  /** Cancels the judge call; it then rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

interface JudgementRow {
  episode_id: string;
  task_id: string;
  template_id: string;
  forbidden_violated: boolean;
  sub_goal_fraction: number | null;
  interaction_fraction: number | null;
  reward: number;
}

/**
 * Judges one finished episode against its task's rubric and stores the reward (seed §3.3): the
 * rubric's rules decide the items they check from the trajectory (checked-rubric.ts), an LLM judge
 * (role `judge`, structured output) gives one verdict per remaining forbidden behaviour (with an
 * evidence quote), sub-goal and required interaction, and {@link rubricReward} turns them into
 * R(τ). With every item rule-checked no model is called. The judgement is written
 * insert-if-absent, so a retried activity returns the first judgement without calling the judge
 * again.
 *
 * A judge that fails — output still invalid after the model layer's one repair
 * (`StructuredOutputRejectedError`), endpoint retries exhausted — throws, and nothing is stored:
 * a rollout is never given a default score. {@link UngradableRubricError} and
 * {@link EpisodeNotGradableError} are not retryable.
 */
export async function judgeEpisode(deps: JudgeDependencies, data: JudgeInputData): Promise<JudgementSummary> {
  const input = JudgeInputSchema.parse(data);
  const { pool } = deps;
  const template = await loadTemplate('judge', input.templates);
  const stored = await findJudgement(pool, input, template.id);
  if (stored) return stored;

  const { judgement, reward, cacheKey, judgeModel, templateId } = await askJudge(deps, input);
  await pool.query(
    `INSERT INTO judgements (episode_id, task_id, run_id, judge_model, template_id, llm_cache_key, verdicts,
                             forbidden_violated, sub_goal_fraction, interaction_fraction, reward)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11)
     ON CONFLICT (episode_id) DO NOTHING`,
    [
      input.episodeId,
      input.taskId,
      input.runId,
      judgeModel,
      templateId,
      cacheKey,
      JSON.stringify(judgement),
      reward.forbiddenViolated,
      reward.subGoalFraction,
      reward.interactionFraction,
      reward.reward,
    ],
  );
  // Read back: when a concurrent attempt wrote first, its judgement is the one that counts.
  const written = await findJudgement(pool, input, templateId);
  if (!written) throw new RowVanishedError('judgements', input.episodeId);
  return written;
}

/** One answer of the judge on an episode, before anything is stored. */
export interface JudgeAnswer {
  /** The verdicts in rubric order, each naming its checker (a rule or the judge). */
  readonly judgement: CheckedJudgement;
  readonly reward: RubricReward;
  /** `llm_calls` key of the judge call (the first, unrepaired one); null when rules decided all. */
  readonly cacheKey: string | null;
  /** Model name of the judge endpoint, or {@link RULES_ONLY_JUDGE} when no judge was called. */
  readonly judgeModel: string;
  /** The judge template's id: its text's hash (templates.ts `templateId`). */
  readonly templateId: string;
}

/**
 * Asks the judge once (the call of sample index `input.draw`) to grade the episode against its
 * task's rubric, and computes R(τ); stores nothing itself. The same prompt for every caller, so
 * a judge stability audit (judge-audit.ts) judges exactly what training judged. Throws what
 * {@link judgeEpisode} says it throws.
 */
export async function askJudge(deps: JudgeDependencies, input: JudgeInput): Promise<JudgeAnswer> {
  const { pool } = deps;
  const task = await loadGradedTask(pool, input.taskId);
  const episode = await loadFinishedEpisode(pool, input);
  const template = await loadTemplate('judge', input.templates);
  const split = splitRubric(task.rubric, episode.messages);
  const asked = needsJudge(split)
    ? await callJudge(deps, input, { ...task, rubric: split.open }, episode, template, JUDGE_ROLE)
    : undefined;
  const judgement = mergeVerdicts(split, asked?.value);
  return {
    judgement,
    reward: rubricReward(verdictsOf(judgement)),
    cacheKey: asked?.cacheKey ?? null,
    judgeModel: asked ? resolveEndpoint(input.judge.endpoint).model : RULES_ONLY_JUDGE,
    templateId: template.id,
  };
}

/** What the judge is shown of an episode: its messages and why it ended. */
export interface GradedEpisode {
  readonly end_reason: string | null;
  readonly messages: Parameters<typeof renderTranscript>[0];
}

/**
 * The judge model's answer on `task.rubric`, every item of which it is asked about (pass the
 * items no rule decides), numbered from 0 per list; `role` names the call in the ledger.
 */
export async function callJudge(
  deps: JudgeDependencies,
  input: Pick<JudgeInput, 'judge' | 'draw' | 'policyVersion' | 'runId'>,
  task: GradedTask,
  episode: GradedEpisode,
  template: Awaited<ReturnType<typeof loadTemplate>>,
  role: string,
): Promise<{ value: Judgement; cacheKey: string }> {
  const open = task.rubric;
  return deps.models.structured(
    {
      endpoint: resolveEndpoint(input.judge.endpoint),
      messages: [
        { role: 'system', content: SYSTEM_PROMPT },
        {
          role: 'user',
          content: renderTemplate(template, {
            instruction: task.instruction,
            hiddenContext: task.hiddenContext,
            // A transcript cut at a cap says so: no credit for steps it never reached.
            transcript:
              (renderTranscript(episode.messages) || '(the assistant did nothing)') +
              truncationNote(episode.end_reason),
            forbidden: numbered(open.forbidden),
            forbiddenCount: String(open.forbidden.length),
            subGoals: numbered(open.subGoals),
            subGoalCount: String(open.subGoals.length),
            requiredInteractions: numbered(open.requiredInteractions),
            interactionCount: String(open.requiredInteractions.length),
          }),
        },
      ],
      sampling: input.judge.sampling,
      sampleIndex: input.draw,
      policyVersion: input.policyVersion,
      runId: input.runId,
      role,
      signal: deps.signal,
    },
    judgementSchema(open),
    JUDGEMENT_SCHEMA_NAME,
  );
}

/**
 * The stored judgement of the episode, if any; one of another task is a caller bug. One made with
 * another judge template text (the template was edited since) is never taken for this one's: the
 * episode cannot be judged again under its id (a new run judges its own episodes).
 */
async function findJudgement(
  pool: pg.Pool,
  input: JudgeInput,
  templateId: string,
): Promise<JudgementSummary | undefined> {
  const { rows } = await pool.query<JudgementRow>(
    `SELECT episode_id, task_id, template_id, forbidden_violated, sub_goal_fraction, interaction_fraction, reward
       FROM judgements WHERE episode_id = $1`,
    [input.episodeId],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (row.task_id !== input.taskId) {
    throw new EpisodeNotGradableError(
      input.episodeId,
      `it was judged for task ${row.task_id}, not ${input.taskId}`,
    );
  }
  if (row.template_id !== templateId) {
    throw new EpisodeNotGradableError(
      input.episodeId,
      `it was judged with judge template ${row.template_id}, and the template is now ${templateId} ` +
        '(edited since); start a new run to judge with the edited template',
    );
  }
  return {
    episodeId: row.episode_id,
    reward: row.reward,
    subGoalFraction: row.sub_goal_fraction,
    interactionFraction: row.interaction_fraction,
    forbiddenViolated: row.forbidden_violated,
  };
}

/** What the judge is shown of a task. */
export interface GradedTask {
  readonly instruction: string;
  readonly hiddenContext: string;
  readonly rubric: Rubric;
}

export async function loadGradedTask(pool: pg.Pool, taskId: string): Promise<GradedTask> {
  const { rows } = await pool.query<{
    rubric: unknown;
    instruction: string | null;
    hidden_context: string | null;
  }>('SELECT rubric, instruction, hidden_context FROM tasks WHERE task_id = $1', [taskId]);
  const row = rows[0];
  if (!row) throw new UngradableRubricError('the task does not exist', taskId);
  if (row.rubric === null) throw new UngradableRubricError('it has no rubric yet', taskId);
  const rubric = RubricSchema.safeParse(row.rubric);
  if (!rubric.success) {
    const where = rubric.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new UngradableRubricError(`its rubric is malformed (${where})`, taskId);
  }
  if (rubric.data.subGoals.length === 0 && rubric.data.requiredInteractions.length === 0) {
    throw new UngradableRubricError('its rubric has neither sub-goals nor required interactions', taskId);
  }
  const misaligned = misalignedChecks(rubric.data);
  if (misaligned.length > 0) throw new UngradableRubricError(`its rubric's ${misaligned.join('; ')}`, taskId);
  return { instruction: row.instruction ?? '', hiddenContext: row.hidden_context ?? '', rubric: rubric.data };
}

async function loadFinishedEpisode(pool: pg.Pool, input: JudgeInput) {
  const { rows } = await pool.query<{
    task_id: string;
    end_reason: string | null;
    messages: Parameters<typeof renderTranscript>[0];
  }>('SELECT task_id, end_reason, messages FROM episodes WHERE episode_id = $1', [input.episodeId]);
  const row = rows[0];
  if (!row) throw new EpisodeNotGradableError(input.episodeId, 'it does not exist');
  if (row.task_id !== input.taskId) {
    throw new EpisodeNotGradableError(
      input.episodeId,
      `it belongs to task ${row.task_id}, not ${input.taskId}`,
    );
  }
  if (row.end_reason === null) throw new EpisodeNotGradableError(input.episodeId, 'it has not ended');
  return row;
}

/** `0. first\n1. second`, or `(none)`: the numbering the judge's indices refer to. */
function numbered(items: readonly string[]): string {
  return items.length === 0 ? '(none)' : items.map((item, i) => `${i}. ${item}`).join('\n');
}
