import os from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Integration files that must run alone: they saturate both cores for minutes and prove recovery
 * within timeouts (chaos, GRPO fault injection), or they assert that no sandbox process is left on
 * the machine, which another file's sandboxed Python would break.
 */
const RUN_ALONE = [
  'test/integration/chaos.test.ts',
  'test/integration/chaos-evaluation-ranks.test.ts',
  'test/integration/grpo-faults.test.ts',
  'test/security/python-sandbox.test.ts',
];

/**
 * Three projects, run in this order (groupOrder). `unit` starts no server: no Temporal, no product
 * service, only the machine's PostgreSQL and the in-process scripted model server
 * (testkit/model-server.ts); `npm run test:unit` runs it alone. `integration` (every other test
 * folder) runs two files at a time on one shared Temporal dev server that its global setup starts:
 * each file has its own databases (testkit/database.ts) and task queues (testkit/temporal.ts), and a
 * file that restarts a service starts its own instance. `integration-alone` runs RUN_ALONE one
 * file at a time after them. No test stops or restarts the machine's PostgreSQL.
 */
export default defineConfig({
  test: {
    testTimeout: 120_000,
    // Tests write the data files their specs name in temporary folders: a data root for the
    // workers they start (activities/data-files.ts), as it would be for a user's data folder.
    env: { MOCKWORLD_DATA_ROOTS: os.tmpdir() },
    hookTimeout: 180_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          // Every other test folder (integration, badinput, security, replay, and any new one).
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/unit/**', ...RUN_ALONE],
          globalSetup: ['testkit/vitest/global-setup.ts'],
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-alone',
          include: RUN_ALONE,
          globalSetup: ['testkit/vitest/global-setup.ts'],
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
