import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Two projects. `unit` starts no server: no Temporal, no product service, only the machine's
 * PostgreSQL and the in-process scripted model server (testkit/model-server.ts); `npm run
 * test:unit` runs it alone. `integration` (every other test folder) shares one Temporal dev
 * server that its global setup starts. A plain `vitest run` runs unit first, then
 * integration (groupOrder). No test stops or restarts the machine's PostgreSQL: one that restarts
 * PostgreSQL runs an instance of its own (testkit/postgres-instance.ts).
 */
export default defineConfig({
  test: {
    testTimeout: 120_000,
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
          exclude: [...configDefaults.exclude, 'test/unit/**'],
          globalSetup: ['testkit/vitest/global-setup.ts'],
          // They share one Temporal dev server and one PostgreSQL; files run one at a time so a
          // restart test never disturbs another file's workflows.
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
