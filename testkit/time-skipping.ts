/**
 * Temporal's time-skipping test environment for tests of workflow logic (test/workflows): the Java
 * SDK's in-memory test server (deploy/temporal-cli.ts `ensureTemporalTestServer`), where timers
 * fire as soon as the workflows wait on nothing else, so hours of a workflow's time take
 * milliseconds. Each file starts its own; activities are doubles registered on the test's worker.
 * Durability (kills, restarts, replays of real histories) stays with the real dev server.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { indexedValueTypes } from '../deploy/search-attributes.js';

/** A time-skipping environment with mockworld's search attributes registered. */
export async function createTimeSkippingEnv(testServer: string): Promise<TestWorkflowEnvironment> {
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: testServer } },
  });
  // The test server adds search attributes but cannot list them (registerSearchAttributes lists first).
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: indexedValueTypes(),
  });
  return env;
}
