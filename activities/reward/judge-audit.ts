/**
 * The judge stability audit (seed 000 App. B, Figure 6): the held-out evaluation episodes a GRPO
 * run played at some checkpoints, a seeded sample of their tasks, each trajectory judged k times
 * by the rubric judge with the prompt training used (askJudge), and the spread of the k scores
 * per checkpoint (audit-stats.ts). Plays no episode; only judges again.
 *
 * Repeat r is the judge call of sample index JUDGE_DRAWS + r: training's own judge drew samples
 * 0 .. JUDGE_DRAWS-1 of each episode, so no repeat is served from training's judgement, and the k
 * repeats are k distinct calls. Each judging is stored once under (audit run, episode, repeat)
 * and each call is in the model ledger, so a retried activity or a re-run of the audit under the
 * same id pays no judge call twice. A judge whose answer stays malformed after its repair is a
 * failure row, counted and never scored.
 */
import type pg from 'pg';
import {
  AuditedRunSpecSchema,
  type CheckpointStability,
  type JudgeAuditSpec,
} from '../../schemas/judge-audit-spec.js';
import { JudgeInputSchema, type JudgeInputData } from '../../schemas/rubric-judge.js';
import { activityCancellation } from '../cancellation.js';
import { heartbeatProgress } from '../heartbeat.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import { StructuredOutputRejectedError, type ModelClient } from '../llm/index.js';
import { getPool } from '../store/db.js';
import { mixSeed, seededShuffle } from '../training/sampling.js';
import { checkpointStability } from './audit-stats.js';
import { JudgeAuditPlanError } from './errors.js';
import { askJudge } from './judge.js';
import { JUDGE_DRAWS } from './unjudged.js';

/** Stream label of the audit's task sample (mixed into the seed, so it never equals a plan's). */
const AUDIT_STREAM = 0x41_55_44_54; // "AUDT"

/** The judge sample index of repeat `repeat`: after the draws training's judge may have used. */
export function auditSampleIndex(repeat: number): number {
  return JUDGE_DRAWS + repeat;
}

/** One trajectory to audit: a held-out evaluation episode of the training run. */
export interface AuditItem {
  readonly policyStep: number;
  readonly taskId: string;
  readonly episodeId: string;
}

/** What the audit judges and with which judge: ids and settings only (a Temporal payload). */
export interface JudgeAuditPlan {
  readonly trainingRunId: string;
  /** Checkpoints audited, ascending. */
  readonly policySteps: readonly number[];
  /** Sampled tasks × checkpoints, by step then task. */
  readonly items: readonly AuditItem[];
  /** The judge: the spec's, or the training run's own. */
  readonly judge: JudgeInputData['judge'];
  /** The training run's templates, so the judge sees the prompt training used. */
  readonly templates: JudgeInputData['templates'];
  /** Model name of the judge endpoint. */
  readonly judgeModel: string;
}

/** One trajectory judged k times. */
export interface AuditTrajectoryInput extends AuditItem {
  readonly auditRunId: string;
  readonly trainingRunId: string;
  readonly k: number;
  readonly judge: JudgeInputData['judge'];
  readonly templates: JudgeInputData['templates'];
}

/**
 * The audit's trajectories: the training run's finished held-out evaluation episodes at the
 * spec's checkpoints (all it has when unset), a seeded sample of `tasks` tasks evaluated at every
 * one of them, and the judge. Not retryable: {@link JudgeAuditPlanError}, naming the spec field.
 */
export async function planJudgeAudit(pool: pg.Pool, spec: JudgeAuditSpec): Promise<JudgeAuditPlan> {
  const runId = spec.trainingRunId;
  const { rows: runs } = await pool.query<{ kind: string; spec: unknown }>(
    'SELECT kind, spec FROM runs WHERE run_id = $1',
    [runId],
  );
  const run = runs[0];
  if (!run) throw new JudgeAuditPlanError(runId, 'trainingRunId', 'no run has this id');
  if (run.kind !== 'GrpoTraining') {
    throw new JudgeAuditPlanError(runId, 'trainingRunId', `it is a ${run.kind} run, not GrpoTraining`);
  }
  const stored = AuditedRunSpecSchema.parse(run.spec);

  const evaluated = await evaluationEpisodes(pool, runId);
  const available = [...evaluated.keys()].sort((a, b) => a - b);
  if (available.length === 0) {
    throw new JudgeAuditPlanError(
      runId,
      spec.checkpoints ? 'checkpoints' : 'trainingRunId',
      'the run has no finished held-out evaluation episodes (evaluateEvery 0, no held-out tasks, or none evaluated yet)',
    );
  }
  const policySteps = spec.checkpoints ? [...spec.checkpoints].sort((a, b) => a - b) : available;
  const missing = policySteps.filter((step) => !evaluated.has(step));
  if (missing.length > 0) {
    throw new JudgeAuditPlanError(
      runId,
      'checkpoints',
      `no held-out evaluation episodes at step ${missing.join(', ')}; the run has them at step ${available.join(', ')}`,
    );
  }
  // The same tasks at every checkpoint, so the checkpoints are compared on one sample.
  const common = [...evaluated.get(policySteps[0]!)!.keys()]
    .filter((taskId) => policySteps.every((step) => evaluated.get(step)!.has(taskId)))
    .sort();
  if (common.length === 0) {
    throw new JudgeAuditPlanError(
      runId,
      'checkpoints',
      'no held-out task was evaluated at every one of them',
    );
  }
  const tasks = seededShuffle(common, mixSeed(spec.seed, AUDIT_STREAM)).slice(0, spec.tasks).sort();
  const judge = JudgeInputSchema.shape.judge.parse(spec.judge ?? stored.judge);
  return {
    trainingRunId: runId,
    policySteps,
    items: policySteps.flatMap((policyStep) =>
      tasks.map((taskId) => ({ policyStep, taskId, episodeId: evaluated.get(policyStep)!.get(taskId)! })),
    ),
    judge,
    templates: stored.templates,
    judgeModel: resolveEndpoint(judge.endpoint).model,
  };
}

/**
 * The run's finished held-out evaluation episodes by policy step and task (the first sample of
 * each), from their deterministic ids `<runId>/eval<i>/<taskId>/r<k>` (training/episode-ids.ts).
 * Episodes the world rejected (`simulator_failed`) were never judged and are left out.
 */
async function evaluationEpisodes(pool: pg.Pool, runId: string): Promise<Map<number, Map<string, string>>> {
  const prefix = `${runId}/eval`;
  const { rows } = await pool.query<{ episode_id: string; task_id: string; policy_version: string }>(
    `SELECT episode_id, task_id, policy_version FROM episodes
      WHERE starts_with(episode_id, $1) AND purpose = 'evaluation'
        AND end_reason IS NOT NULL AND end_reason <> 'simulator_failed'
      ORDER BY episode_id`,
    [prefix],
  );
  const byStep = new Map<number, Map<string, string>>();
  for (const row of rows) {
    const id = /^\d+\/(.+)\/r\d+$/.exec(row.episode_id.slice(prefix.length));
    const step = /^step-(\d+)$/.exec(row.policy_version);
    // Another run whose id merely starts like this one's, or a version that is no policy step.
    if (!id || id[1] !== row.task_id || !step) continue;
    const tasks = byStep.get(Number(step[1])) ?? new Map<string, string>();
    byStep.set(Number(step[1]), tasks);
    if (!tasks.has(row.task_id)) tasks.set(row.task_id, row.episode_id);
  }
  return byStep;
}

/** The judgings of one trajectory, as stored. */
export interface AuditTrajectoryResult {
  readonly episodeId: string;
  readonly scored: number;
  readonly failures: number;
}

/**
 * Judges one trajectory k times (repeats not yet stored only) and stores each judging
 * insert-if-absent. A judge answer still malformed after its repair is stored as a failure; any
 * other error (the endpoint down) fails the attempt, which is retried, finding what was stored.
 */
export async function judgeAuditTrajectory(
  pool: pg.Pool,
  models: ModelClient,
  input: AuditTrajectoryInput,
  signal?: AbortSignal,
): Promise<AuditTrajectoryResult> {
  const { rows: done } = await pool.query<{ repeat: number }>(
    'SELECT repeat FROM judge_audit_judgings WHERE audit_run_id = $1 AND episode_id = $2',
    [input.auditRunId, input.episodeId],
  );
  const stored = new Set(done.map((row) => row.repeat));
  const { rows: episode } = await pool.query<{ policy_version: string }>(
    'SELECT policy_version FROM episodes WHERE episode_id = $1',
    [input.episodeId],
  );
  for (let repeat = 0; repeat < input.k; repeat++) {
    if (stored.has(repeat)) continue;
    heartbeatProgress({ episodeId: input.episodeId, repeat, k: input.k });
    const judgeInput = JudgeInputSchema.parse({
      episodeId: input.episodeId,
      taskId: input.taskId,
      judge: input.judge,
      runId: input.auditRunId,
      templates: input.templates,
      draw: auditSampleIndex(repeat),
      // As training called it: the judge may share its endpoint with the policy.
      policyVersion: episode[0]?.policy_version ?? 'base',
    });
    let row: {
      judgeModel: string;
      cacheKey: string | null;
      verdicts: string | null;
      reward: number | null;
      failure: string | null;
    };
    try {
      const answer = await askJudge({ pool, models, signal }, judgeInput);
      row = {
        judgeModel: answer.judgeModel,
        cacheKey: answer.cacheKey,
        verdicts: JSON.stringify(answer.judgement),
        reward: answer.reward.reward,
        failure: null,
      };
    } catch (error) {
      if (!(error instanceof StructuredOutputRejectedError)) throw error;
      row = {
        judgeModel: resolveEndpoint(judgeInput.judge.endpoint).model,
        cacheKey: error.cacheKey,
        verdicts: null,
        reward: null,
        failure: error.reason,
      };
    }
    await pool.query(
      `INSERT INTO judge_audit_judgings (audit_run_id, episode_id, repeat, training_run_id, policy_step, task_id,
                                         sample_index, judge_model, llm_cache_key, verdicts, reward, failure)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12)
       ON CONFLICT (audit_run_id, episode_id, repeat) DO NOTHING`,
      [
        input.auditRunId,
        input.episodeId,
        repeat,
        input.trainingRunId,
        input.policyStep,
        input.taskId,
        judgeInput.draw,
        row.judgeModel,
        row.cacheKey,
        row.verdicts,
        row.reward,
        row.failure,
      ],
    );
  }
  const { rows } = await pool.query<{ scored: number; failures: number }>(
    `SELECT count(reward)::int AS scored, count(failure)::int AS failures
       FROM judge_audit_judgings WHERE audit_run_id = $1 AND episode_id = $2 AND repeat < $3`,
    [input.auditRunId, input.episodeId, input.k],
  );
  return { episodeId: input.episodeId, ...rows[0]! };
}

/** The audit's numbers per checkpoint, from its stored judgings (repeats below k only). */
export async function summarizeJudgeAudit(
  pool: pg.Pool,
  input: { auditRunId: string; k: number },
): Promise<CheckpointStability[]> {
  const { rows } = await pool.query<{ policy_step: number; episode_id: string; reward: number | null }>(
    `SELECT policy_step, episode_id, reward FROM judge_audit_judgings
      WHERE audit_run_id = $1 AND repeat < $2 ORDER BY policy_step, episode_id, repeat`,
    [input.auditRunId, input.k],
  );
  return checkpointStability(
    rows.map((r) => ({ policyStep: r.policy_step, episodeId: r.episode_id, reward: r.reward })),
  );
}

/** The audit's activities, bound to one database and model client. */
export function createJudgeAuditActivities(databaseUrl: string, models: ModelClient) {
  const pool = () => getPool(databaseUrl);
  return {
    /** The audit's trajectories and judge. Not retryable: `JudgeAuditPlanError`. */
    async planJudgeAudit(spec: JudgeAuditSpec): Promise<JudgeAuditPlan> {
      return planJudgeAudit(pool(), spec);
    },
    /** One trajectory judged k times (idempotent: stored repeats are not judged again). */
    async judgeAuditTrajectory(input: AuditTrajectoryInput): Promise<AuditTrajectoryResult> {
      return judgeAuditTrajectory(pool(), models, input, activityCancellation());
    },
    /** Mean score, within-trajectory variance and std, and failures per checkpoint. */
    async summarizeJudgeAudit(input: { auditRunId: string; k: number }): Promise<CheckpointStability[]> {
      return summarizeJudgeAudit(pool(), input);
    },
  };
}

/** The audit activities' interface, for `proxyActivities`. */
export type JudgeAuditActivities = ReturnType<typeof createJudgeAuditActivities>;
