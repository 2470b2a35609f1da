import type { Client, WorkflowHandle } from '@temporalio/client';
import type { JudgeAuditSummary } from '../schemas/judge-audit-spec.js';
import type { RunStatus } from '../schemas/run-status.js';
import { parseSpec, type AnySpec, type SpecInput, type SpecKind } from '../schemas/specs.js';
import type { EvaluationSummary } from '../workflows/evaluation.js';
import type { GrpoSummary } from '../workflows/grpo-training.js';
import type { StudySummary } from '../workflows/scaling-study.js';
import type { SftSummary } from '../workflows/sft-training.js';
import type { SmokeSummary } from '../workflows/smoke.js';
import type { SynthesisSummary } from '../workflows/synthesis.js';
import { statusQuery } from '../workflows/controls.js';
import { iterationTasksQuery, latestMetricsQuery, stopSignal } from '../workflows/grpo-controls.js';
import { cellStatesQuery } from '../workflows/study-controls.js';
import { connectClient, type ConnectOptions } from './connect.js';
import {
  cancelRun,
  describeRun,
  queryRun,
  signalRun,
  startRun,
  taskStage,
  type RunOverview,
} from './runs.js';

export { connectClient, type ConnectOptions } from './connect.js';
export { defaultWorkflowId, type RunOverview } from './runs.js';
export type { SpecInput, SpecInputOfKind, SpecKind } from '../schemas/specs.js';

/** What a run of each kind returns when it completes. */
export interface RunResults {
  Smoke: SmokeSummary;
  Synthesis: SynthesisSummary;
  GrpoTraining: GrpoSummary;
  ScalingStudy: StudySummary;
  Evaluation: EvaluationSummary;
  JudgeAudit: JudgeAuditSummary;
  SftTraining: SftSummary;
}
export type {
  EvaluationSummary,
  GrpoSummary,
  JudgeAuditSummary,
  SftSummary,
  SmokeSummary,
  StudySummary,
  SynthesisSummary,
};

/**
 * Starts mockworld runs from spec documents and controls them: the same operations as the CLI and
 * the Temporal UI, typed. Runs are ordinary Temporal workflows (type = the spec's kind), so any
 * Temporal client can also reach them by id.
 *
 * ```ts
 * const mockworld = await MockworldClient.connect();
 * const run = await mockworld.start(yaml.parse(await readFile('synthesis.yaml', 'utf8')));
 * await run.pause();
 * console.log(await run.status());
 * ```
 */
export class MockworldClient {
  /** Connects to Temporal (options default to the environment, as for the workers). */
  static async connect(
    options: ConnectOptions & { readonly taskQueue?: string } = {},
  ): Promise<MockworldClient> {
    return new MockworldClient(await connectClient(options), options.taskQueue);
  }

  /**
   * @param temporal a Temporal client (give it the payload codec the workers use, if any)
   * @param taskQueue the queue mockworld's workers poll; default `MOCKWORLD_TASK_QUEUE`
   */
  constructor(
    readonly temporal: Client,
    private readonly taskQueue?: string,
  ) {}

  /**
   * Validates `document` as a spec (throws SpecValidationError naming every bad field; nothing
   * is started) and starts its run. `id` defaults to kind-name-UTC time. Typed by its `kind`: a
   * literal spec is checked at compile time and the run's `result()` has that kind's summary; a
   * parsed YAML document (`any`) is checked at run time only.
   */
  async start<S extends SpecInput>(
    document: S,
    options: { readonly id?: string } = {},
  ): Promise<MockworldRun<S['kind']>> {
    const spec: AnySpec = parseSpec(document);
    return this.run<S['kind']>(await startRun(this.temporal, spec, options.id, this.taskQueue));
  }

  /** A handle on an existing run; name its kind to type its result. */
  run<K extends SpecKind = SpecKind>(workflowId: string): MockworldRun<K> {
    return new MockworldRun<K>(this.temporal, workflowId);
  }

  /** Closes the connection to Temporal. */
  async close(): Promise<void> {
    await this.temporal.connection.close();
  }
}

/** One run's controls and looks. Queries need a worker; without one they fail within 5 s saying so. */
export class MockworldRun<K extends SpecKind = SpecKind> {
  constructor(
    private readonly temporal: Client,
    readonly workflowId: string,
  ) {}

  /** Stop starting new work; work already running finishes. */
  pause(): Promise<void> {
    return signalRun(this.temporal, this.workflowId, 'pause');
  }

  /** Continue after `pause`. */
  resume(): Promise<void> {
    return signalRun(this.temporal, this.workflowId, 'resume');
  }

  /** GrpoTraining, SftTraining: finish the current iteration (step), pin its checkpoint, complete. */
  stop(): Promise<void> {
    return this.handle().signal(stopSignal);
  }

  /** Cancel: the run stops at its next safe point and records `cancelled`. */
  cancel(): Promise<void> {
    return cancelRun(this.temporal, this.workflowId);
  }

  /** State, done/total, stage and counts, as the run reports them; `kind` is the run's kind. */
  status(): Promise<RunStatus & { readonly kind: K }> {
    return queryRun(this.temporal, this.workflowId, statusQuery) as Promise<RunStatus & { readonly kind: K }>;
  }

  /** Temporal's view and the run's own status; the last recorded progress when no worker answers. */
  describe(): Promise<RunOverview> {
    return describeRun(this.temporal, this.workflowId);
  }

  /** Synthesis: the stage of task `index`. */
  taskStage(index: number): Promise<string> {
    return taskStage(this.temporal, this.workflowId, index);
  }

  /** ScalingStudy: the state of every cell. */
  cellStates(): Promise<Record<string, string>> {
    return queryRun(this.temporal, this.workflowId, cellStatesQuery);
  }

  /** GrpoTraining: each task of the current iteration and its status. */
  iterationTasks(): Promise<Record<string, string>> {
    return queryRun(this.temporal, this.workflowId, iterationTasksQuery);
  }

  /** GrpoTraining, SftTraining: the metrics of the latest finished iteration (step). */
  latestMetrics(): Promise<Record<string, unknown>> {
    return queryRun(this.temporal, this.workflowId, latestMetricsQuery);
  }

  /** The run's result (its summary) once it closes; throws if it failed or was cancelled. */
  result(): Promise<RunResults[K]> {
    return this.handle().result() as Promise<RunResults[K]>;
  }

  private handle(): WorkflowHandle {
    return this.temporal.workflow.getHandle(this.workflowId);
  }
}
