import type { Client, WorkflowHandle } from '@temporalio/client';
import type { RunStatus } from '../schemas/run-status.js';
import { parseSpec, type AnySpec } from '../schemas/specs.js';
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
   * is started) and starts its run. `id` defaults to kind-name-UTC time.
   */
  async start(document: unknown, options: { readonly id?: string } = {}): Promise<MockworldRun> {
    const spec: AnySpec = parseSpec(document);
    return this.run(await startRun(this.temporal, spec, options.id, this.taskQueue));
  }

  /** A handle on an existing run. */
  run(workflowId: string): MockworldRun {
    return new MockworldRun(this.temporal, workflowId);
  }

  /** Closes the connection to Temporal. */
  async close(): Promise<void> {
    await this.temporal.connection.close();
  }
}

/** One run's controls and looks. Queries need a worker; without one they fail within 5 s saying so. */
export class MockworldRun {
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

  /** State, done/total, stage and counts, as the run reports them. */
  status(): Promise<RunStatus> {
    return queryRun(this.temporal, this.workflowId, statusQuery);
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
  result(): Promise<unknown> {
    return this.handle().result();
  }

  private handle(): WorkflowHandle {
    return this.temporal.workflow.getHandle(this.workflowId);
  }
}
