import { DefaultLogger, Runtime, type WorkerDeploymentOptions } from '@temporalio/worker';
import { freeLoopbackPort, startMetricsServer } from '../services/http/metrics-server.js';
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
 * With MOCKWORLD_METRICS_ADDRESS set, installs the SDK runtime with a Prometheus exporter and
 * serves it there with mockworld's own series (http://<address>/metrics: task latencies, slots,
 * polls, sticky cache; model calls, tokens, cost, cache and mapping hits, errors, rollouts,
 * rewards), which is also what the container probes ask. Must run before the first connection of the process; returns whether it
 * installed one.
 */
export async function installMetricsRuntime(env: Environment): Promise<boolean> {
  if (!env.MOCKWORLD_METRICS_ADDRESS) return false;
  // The SDK exports on a loopback port of its own; the address serves its series and mockworld's.
  const sdkPort = await freeLoopbackPort();
  Runtime.install({
    logger: new DefaultLogger('INFO'),
    telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${sdkPort}` } } },
  });
  await startMetricsServer(env.MOCKWORLD_METRICS_ADDRESS, `http://127.0.0.1:${sdkPort}/metrics`);
  return true;
}
