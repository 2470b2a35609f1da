import path from 'node:path';
import { Context } from '@temporalio/activity';
import { loadEnvironment } from '../../schemas/environment.js';
import type { ReasoningProblemResult } from '../../schemas/reasoning-synthesis.js';
import type { SynthesisSpec } from '../../schemas/synthesis-spec.js';
import { onlineRole } from '../../schemas/model-endpoint.js';
import { heartbeatProgress } from '../heartbeat.js';
import type { ModelClient } from '../llm/index.js';
import { getPool } from '../store/db.js';
import { locateSandbox, type SandboxInstall } from '../sandbox/index.js';
import { createEpisodeRunner, type EpisodeProgress, type EpisodeSummary } from '../world/index.js';
import { datasetDirectoryName, exportRunDataset } from './export.js';
import { loadPersonas, type LoadPersonasInput } from './personas.js';
import { exportReasoningProblems, reasoningReport } from './reasoning-export.js';
import { loadReasoningSeeds, type LoadSeedsInput } from './reasoning-seeds.js';
import {
  recordReasoningProblemFailure,
  synthesizeReasoningProblem,
  type ReasoningProblemFailure,
  type ReasoningProblemInput,
} from './reasoning.js';
import { coverageJudgeStanding } from './coverage-controls.js';
import { synthesisReport } from './report.js';
import { createStageActivities } from './stages.js';
import { createTaskStepActivities } from './task-steps.js';

/** Input of one teacher demonstration in the mock world (one episode of runDemonstrations). */
export interface DemonstrationInput {
  readonly episodeId: string;
  readonly taskId: string;
  readonly sampleIndex: number;
  readonly maxTurns: number;
  /** The agent's tool choice on its first turns; absent in histories from before the setting. */
  readonly turnToolChoice?: SynthesisSpec['demonstrationToolChoice'];
  readonly models: SynthesisSpec['models'];
  readonly templates: SynthesisSpec['templates'];
  /** What a simulator that gives no usable answer does; absent in histories from before the setting. */
  readonly world?: SynthesisSpec['world'];
}

/** Input of all K teacher demonstrations of a task (episode ids `<taskId>-demo-<k>`). */
export interface DemonstrationsInput extends Omit<DemonstrationInput, 'episodeId' | 'sampleIndex'> {
  readonly count: number;
}

/** The episode of one teacher demonstration. */
function demonstrationEpisode(input: DemonstrationInput) {
  return {
    episodeId: input.episodeId,
    taskId: input.taskId,
    purpose: 'demonstration' as const,
    sampleIndex: input.sampleIndex,
    policyVersion: 'teacher',
    runId: input.taskId,
    agentRoleName: 'teacher',
    // Each turn of a demonstration needs its answer now: the teacher's batch mode is for its stages.
    agent: onlineRole(input.models.teacher),
    toolSimulator: input.models.toolSimulator,
    userSimulator: input.models.userSimulator,
    maxTurns: input.maxTurns,
    turnToolChoice: input.turnToolChoice,
    templates: input.templates,
    world: input.world,
  };
}

/** Every activity of the synthesis pipeline, bound to one database and model client. */
export function createSynthesisActivities(databaseUrl: string, models: ModelClient) {
  const pool = () => getPool(databaseUrl);
  const world = createEpisodeRunner({ databaseUrl, models });
  let sandbox: SandboxInstall | undefined;
  const stages = createStageActivities(pool, models);
  return {
    ...stages,
    ...createTaskStepActivities(stages),

    /** Loads the run's personas into PostgreSQL; returns counts only. */
    async loadSynthesisPersonas(input: LoadPersonasInput) {
      return loadPersonas(pool(), input);
    },

    /**
     * Stage (d), all K demonstrations of a task in one activity, run concurrently; each checkpoints
     * its turns in PostgreSQL, so a retry resumes every unfinished one from its last turn (and
     * repeats no paid call: finished ones return their stored summary). Heartbeats carry each
     * episode's progress. All are awaited before a failure is thrown, so no episode of a failed
     * attempt still runs when the next attempt starts. Returns the episode ids, in order.
     */
    async runDemonstrations(input: DemonstrationsInput): Promise<string[]> {
      const progress: (EpisodeProgress | null)[] = Array.from({ length: input.count }, () => null);
      const signal = Context.current().cancellationSignal;
      const settled = await Promise.allSettled(
        progress.map((_, k) =>
          world.runEpisode(
            demonstrationEpisode({ ...input, episodeId: `${input.taskId}-demo-${k}`, sampleIndex: k }),
            {
              onTurn: (p) => {
                progress[k] = p;
                heartbeatProgress({ stage: 'demonstrations', episodes: progress });
              },
              signal,
            },
          ),
        ),
      );
      const failed = settled.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
      return settled.map((s) => (s as PromiseFulfilledResult<EpisodeSummary>).value.episodeId);
    },

    /** Loads the run's reasoning seed problems into PostgreSQL; returns counts only. */
    async loadReasoningSeeds(input: LoadSeedsInput) {
      return loadReasoningSeeds(pool(), input);
    },

    /**
     * One reasoning problem, start to outcome: rewrite into a persona scenario, the teacher's
     * solutions, the agreement check (math-verify runs in the sandbox); its row records the outcome.
     */
    async synthesizeReasoningProblem(input: ReasoningProblemInput): Promise<ReasoningProblemResult> {
      const signal = Context.current().cancellationSignal;
      return synthesizeReasoningProblem(
        {
          pool: pool(),
          models,
          sandbox: () => ({
            install: (sandbox ??= locateSandbox(loadEnvironment().MOCKWORLD_SANDBOX_VENV)),
            signal,
          }),
          signal,
        },
        input,
      );
    },

    /** Marks a reasoning problem failed once its activity has given up (its row stays pending otherwise). */
    async recordReasoningProblemFailure(failure: ReasoningProblemFailure): Promise<void> {
      await recordReasoningProblemFailure(pool(), failure);
    },

    /** Writes the statistics report and the exported dataset, and marks the run completed. */
    async finishSynthesis({
      runId,
    }: {
      runId: string;
    }): Promise<{ directory: string; kept: number; reasoningKept: number }> {
      const report = await synthesisReport(pool(), runId);
      const judge = await coverageJudgeStanding(pool(), runId, report.coverageJudgeControls);
      const directory = path.join(loadEnvironment().MOCKWORLD_HOME, 'datasets', datasetDirectoryName(runId));
      const exported = await exportRunDataset(pool(), runId, directory);
      const reasoning = await reasoningReport(pool(), runId);
      const reasoningFile = reasoning ? await exportReasoningProblems(pool(), runId, directory) : null;
      await pool().query(
        `UPDATE runs SET status = 'completed', summary = $2, updated_at = now() WHERE run_id = $1`,
        [
          runId,
          JSON.stringify({
            ...(judge && { judge }),
            ...report,
            dataset: {
              directory,
              tasksFile: exported.tasksFile,
              verlFile: exported.verlFile,
              rows: exported.rows,
              ...(reasoningFile && { reasoningFile: reasoningFile.file, reasoningRows: reasoningFile.rows }),
            },
            ...(reasoning && { reasoning }),
          }),
        ],
      );
      return { directory, kept: exported.rows, reasoningKept: reasoningFile?.rows ?? 0 };
    },
  };
}

/** The synthesis activities' interface, for `proxyActivities`. */
export type SynthesisActivities = ReturnType<typeof createSynthesisActivities>;
