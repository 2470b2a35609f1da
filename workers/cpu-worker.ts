import { NativeConnection, Worker } from '@temporalio/worker';
import { loadEnvironment } from '../schemas/environment.js';
import { CONNECT_HINT, temporalTarget, type TemporalTarget } from '../services/temporal/connection.js';
import { installMetricsRuntime, workerDeploymentOptions } from './deployment.js';
import { workerTracing } from './tracing.js';
import { MockworldPlugin } from './plugin.js';

/**
 * Worker settings of the CPU worker; bench/grpo.ts measures them against the SDK defaults.
 *
 * - `maxConcurrentActivityTaskExecutions`: rollouts and model calls are I/O-bound, so this is high.
 * - `maxEagerActivityReservationsPerWorkflowTask`: a workflow task that schedules activities on
 *   this worker's own queue takes up to this many of them straight back in its completion (eager
 *   execution, where the server enables it, as the dev server does), instead of each one going
 *   through the task queue and a poll. A GrpoGroup schedules its n rollouts (16 by default) in one
 *   workflow task; with the SDK's default of 3 the other 13 waited in the queue (seconds on a busy
 *   machine) and each cost the server a dispatch. Measured on 2 shared cores: runRollout
 *   schedule-to-start p50 from seconds to ~0, less than half the workflow tasks and 35-40% less
 *   dev server CPU per rollout, +15-50% rollouts/s. Reservations never exceed the free activity
 *   slots, so a full worker leaves the rest to the queue and the other workers.
 */
export const CPU_WORKER_TUNING = {
  maxConcurrentActivityTaskExecutions: 512,
  maxEagerActivityReservationsPerWorkflowTask: 64,
} as const;

/** Options of a CPU worker; each defaults to the environment. */
export interface CpuWorkerOptions {
  /** Temporal frontend host:port (used by runCpuWorker); default: Temporal's environment configuration. */
  readonly address?: string;
  /** Default: Temporal's environment configuration (TEMPORAL_NAMESPACE or the profile's). */
  readonly namespace?: string;
  readonly taskQueue?: string;
  readonly databaseUrl?: string;
  /** Activities run at once: rollouts and model calls are I/O-bound, so this is high. */
  readonly maxConcurrentActivities?: number;
}

/** Temporal's frontend cannot be reached (or waiting for it was interrupted); says where and what to do. */
export class TemporalUnreachableError extends Error {
  override readonly name = 'TemporalUnreachableError';
  constructor(
    /** The frontend's host:port. */
    readonly address: string,
    message: string,
  ) {
    super(message);
  }
}

const gaveUp = (address: string) =>
  new TemporalUnreachableError(address, `gave up waiting for Temporal at ${address} (interrupted)`);

/**
 * Connects to Temporal, saying where and what to do when it cannot. `target`: a resolved target, or
 * a host:port that overrides only the address of Temporal's environment configuration (TLS, API
 * key and metadata still apply); default: the environment configuration as it is.
 */
export async function connectWorker(
  target: string | TemporalTarget = temporalTarget(),
): Promise<NativeConnection> {
  const { address, connection, security } =
    typeof target === 'string' ? temporalTarget({ address: target }) : target;
  try {
    return await NativeConnection.connect(connection);
  } catch (error) {
    throw new TemporalUnreachableError(
      address,
      `Temporal is not reachable at ${address} (${security}; ${(error as Error).message}). ${CONNECT_HINT}`,
    );
  }
}

/**
 * Connects to Temporal, waiting for it as long as it takes: a worker started before the frontend
 * (a node rebooting with the cluster, a dev server restarting) serves once it is up, with no one
 * restarting it. Says what it waits for at once, then once a minute.
 */
export async function connectWorkerWhenUp(
  target: string | TemporalTarget = temporalTarget(),
  log: (line: string) => void = (line) => console.error(line),
): Promise<NativeConnection> {
  // Resolved once, before waiting: a broken configuration fails at once instead of being waited on.
  const resolved = typeof target === 'string' ? temporalTarget({ address: target }) : target;
  const address = resolved.address;
  // The SDK's runtime takes over SIGINT/SIGTERM once created; give up waiting on them ourselves.
  let interrupted = false;
  let wake = () => {};
  const onSignal = () => {
    interrupted = true;
    wake();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const started = Date.now();
    let lastSaid = 0;
    for (let wait = 1_000; ; wait = Math.min(2 * wait, 10_000)) {
      try {
        return await connectWorker(resolved);
      } catch (error) {
        if (interrupted) throw gaveUp(address);
        if (lastSaid === 0 || Date.now() - lastSaid >= 60_000) {
          const waited = Math.round((Date.now() - started) / 1000);
          log(`${(error as Error).message} Waiting for it (${waited} s so far); Ctrl-C to give up.`);
          lastSaid = Date.now();
        }
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, wait);
      });
      if (interrupted) throw gaveUp(address);
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** Builds (but does not run) a worker serving mockworld's workflows and CPU activities. */
export async function createCpuWorker(
  connection: NativeConnection,
  options: CpuWorkerOptions = {},
): Promise<Worker> {
  const env = loadEnvironment();
  const deployment = workerDeploymentOptions(env);
  const tracing = workerTracing();
  return Worker.create({
    connection,
    ...(deployment ? { workerDeploymentOptions: deployment } : {}),
    namespace: options.namespace ?? temporalTarget().namespace,
    taskQueue: options.taskQueue ?? env.MOCKWORLD_TASK_QUEUE,
    plugins: [
      new MockworldPlugin({ databaseUrl: options.databaseUrl ?? env.DATABASE_URL }),
      ...(tracing ? [tracing.plugin] : []),
    ],
    ...CPU_WORKER_TUNING,
    maxConcurrentActivityTaskExecutions:
      options.maxConcurrentActivities ?? CPU_WORKER_TUNING.maxConcurrentActivityTaskExecutions,
  });
}

/** Runs a CPU worker until SIGINT/SIGTERM (waiting for Temporal if it is not up yet), then drains and closes its connection. */
export async function runCpuWorker(options: CpuWorkerOptions = {}): Promise<void> {
  await installMetricsRuntime(loadEnvironment());
  const target = temporalTarget({ address: options.address, namespace: options.namespace });
  const connection = await connectWorkerWhenUp(target);
  try {
    await (await createCpuWorker(connection, { ...options, namespace: target.namespace })).run();
  } finally {
    await workerTracing()
      ?.shutdown()
      .catch(() => undefined);
    await connection.close().catch(() => undefined);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runCpuWorker().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
