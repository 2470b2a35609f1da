import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration tests share one Temporal dev server and one PostgreSQL; files run one at a time
    // so a restart test never disturbs another file's workflows.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 180_000,
    globalSetup: ['testkit/vitest/global-setup.ts'],
  },
});
