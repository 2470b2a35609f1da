import { DefaultLogger, Runtime, type WorkerDeploymentOptions } from '@temporalio/worker';
import type { Environment } from '../schemas/environment.js';

/**
 * How a CPU worker runs in a deployment, from the environment: its Worker Versioning version and
 * its metrics endpoint (workflows/README.md "Versioning"; the Kubernetes manifests in deploy/k8s
 * set both).
 */

/**
 * Worker Versioning for this worker when MOCKWORLD_BUILD_ID is set: it polls as build
 * `MOCKWORLD_BUILD_ID` of the Worker Deployment `MOCKWORLD_DEPLOYMENT_NAME`, and its workflows are
 * PINNED: a run stays on the build that started it, so a new build with restructured workflow
 * code never replays an old run. New runs go to the deployment's current version, which an
 * operator (or a rollout job) sets once the new build's workers poll:
 * `temporal worker deployment set-current-version --deployment-name mockworld --build-id <id>`.
 * Unset: an unversioned worker, as before.
 */
export function workerDeploymentOptions(env: Environment): WorkerDeploymentOptions | undefined {
  if (!env.MOCKWORLD_BUILD_ID) return undefined;
  return {
    useWorkerVersioning: true,
    version: { deploymentName: env.MOCKWORLD_DEPLOYMENT_NAME, buildId: env.MOCKWORLD_BUILD_ID },
    defaultVersioningBehavior: 'PINNED',
  };
}

/**
 * With MOCKWORLD_METRICS_ADDRESS set, installs the SDK runtime with a Prometheus exporter there
 * (http://<address>/metrics: task latencies, slots, polls, sticky cache), which is also what the
 * container probes ask. Must run before the first connection of the process; returns whether it
 * installed one.
 */
export function installMetricsRuntime(env: Environment): boolean {
  if (!env.MOCKWORLD_METRICS_ADDRESS) return false;
  Runtime.install({
    logger: new DefaultLogger('INFO'),
    telemetryOptions: { metrics: { prometheus: { bindAddress: env.MOCKWORLD_METRICS_ADDRESS } } },
  });
  return true;
}
