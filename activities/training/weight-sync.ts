/**
 * The weight-sync activity: after a trainer step, make every rollout replica serve the new policy
 * through the engine's own API, then check that each one reports it, before the workflow samples
 * any rollout of the next iteration. Idempotent: a replica that already serves the step is only
 * checked, so a retried attempt (or the check at the start of a continued run) pushes nothing twice.
 *
 * Failures: an admin call is tried `serving.attempts` times (refused connections, 5xx, 429); a 4xx
 * is a WeightSyncRejectedError, not retryable (the route is not enabled, the path is not readable),
 * as is a WeightSyncInputError (the step has no weights directory or adapter to push);
 * a replica that keeps serving another version past `verifyTimeoutMs` is a StalePolicyError, which
 * Temporal retries (pushing again) and which, once the attempts are spent, fails the run rather
 * than let it train on rollouts of a stale policy.
 */
import { ApplicationFailure } from '@temporalio/activity';
import {
  SyncPolicyInputSchema,
  type SyncPolicyInput,
  type SyncPolicyResult,
} from '../../schemas/policy-serving.js';
import { AdminClient, driverFor, type EngineDriver } from './weight-sync-engines.js';
import { StalePolicyError, WeightSyncInputError, WeightSyncRejectedError } from './weight-sync-errors.js';

/** What the activity needs besides its input (tests shorten the waits). */
export interface WeightSyncDeps {
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => number;
  /** Called after each replica is synced (heartbeats). */
  readonly onReplica?: (done: number, total: number) => void;
}

const sleepMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Makes every replica of `input` serve step `input.step`; see the module comment. */
export async function syncPolicyWeights(
  input: SyncPolicyInput,
  deps: WeightSyncDeps = {},
): Promise<SyncPolicyResult> {
  const parsed = SyncPolicyInputSchema.parse(input);
  const sleep = deps.sleep ?? sleepMs;
  const now = deps.now ?? Date.now;
  const apiKey = parsed.apiKeyEnv ? process.env[parsed.apiKeyEnv] : undefined;
  let done = 0;
  try {
    const driver = driverFor(parsed);
    const replicas = await Promise.all(
      parsed.replicas.map(async (url) => {
        const admin = new AdminClient(url, {
          attempts: parsed.serving.attempts,
          timeoutMs: parsed.serving.requestTimeoutMs,
          apiKey,
          sleep,
        });
        const state = await syncReplica(driver, admin, parsed.serving.verifyTimeoutMs, sleep, now);
        deps.onReplica?.(++done, parsed.replicas.length);
        return state;
      }),
    );
    return { step: parsed.step, servedModel: driver.servedModel, replicas };
  } catch (error) {
    if (error instanceof WeightSyncRejectedError || error instanceof WeightSyncInputError) {
      throw ApplicationFailure.create({
        type: error.name,
        message: error.message,
        nonRetryable: true,
        cause: error,
      });
    }
    throw error;
  }
}

async function syncReplica(
  driver: EngineDriver,
  admin: AdminClient,
  verifyTimeoutMs: number,
  sleep: (ms: number) => Promise<void>,
  now: () => number,
) {
  const before = await driver.read(admin);
  const pushed = driver.alwaysPush || before !== driver.expected;
  if (pushed) await driver.push(admin);
  // The engine may apply a load after answering it (or, for the built-in server, on its next
  // look at the checkpoint directory): poll until it reports the step or the timeout passes.
  const deadline = now() + verifyTimeoutMs;
  let served = await driver.read(admin);
  for (let wait = 100; served !== driver.expected; wait = Math.min(wait * 2, 2_000)) {
    if (now() >= deadline) throw new StalePolicyError(admin.url, driver.expected, served);
    await sleep(wait);
    served = await driver.read(admin);
  }
  // Old adapters only go once the new one is served: rollouts in flight never lose their model.
  await driver.cleanup(admin);
  return { url: admin.url, served, pushed, retries: admin.retries };
}
