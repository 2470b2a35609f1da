/**
 * The worker project `mockworld init` writes: a package with the plugin in a worker, a typed
 * client script that starts a Smoke run and prints its summary, the spec it starts, and a
 * strict tsconfig. Everything in it type-checks and runs as written
 * (test/integration/package-install.test.ts does both from the packed package).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../deploy/paths.js';

/** What `mockworld init` is told. */
export interface ScaffoldOptions {
  /** The project's package name. */
  readonly name: string;
  /** The dependency spec of mockworld itself: a version range, or `file:` a tarball. */
  readonly mockworld?: string;
}

/** This package's version: the range a new project depends on. */
function ownVersion(): string {
  return (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string })
    .version;
}

/** File name -> content of a new worker project. */
export function scaffoldFiles(options: ScaffoldOptions): Record<string, string> {
  return {
    'package.json': json({
      name: options.name,
      private: true,
      type: 'module',
      scripts: {
        worker: 'tsx worker.ts',
        smoke: 'tsx start-smoke.ts',
        typecheck: 'tsc --noEmit',
      },
      dependencies: {
        mockworld: options.mockworld ?? `^${ownVersion()}`,
        '@temporalio/client': '^1.24.0',
        '@temporalio/worker': '^1.24.0',
      },
      devDependencies: { '@types/node': '^20.19.0', tsx: '^4.23.0', typescript: '^5.9.0' },
    }),
    'tsconfig.json': json({
      compilerOptions: {
        strict: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        noEmit: true,
        types: ['node'],
      },
      include: ['*.ts'],
    }),
    'worker.ts': WORKER,
    'start-smoke.ts': START,
    'smoke-spec.ts': SPEC,
    '.gitignore': 'node_modules/\n',
    'README.md': readme(options.name),
  };
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

const WORKER = `// A mockworld worker: Temporal's worker with the mockworld plugin (its workflows, activities,
// search attributes and database migrations). Runs until Ctrl-C.
import { NativeConnection, Worker } from '@temporalio/worker';
import { MockworldPlugin } from 'mockworld/plugin';

const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
const worker = await Worker.create({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  taskQueue: process.env.MOCKWORLD_TASK_QUEUE ?? 'mockworld-cpu',
  plugins: [new MockworldPlugin()], // PostgreSQL from DATABASE_URL
});
console.log(\`worker polling \${worker.options.taskQueue}\`);
await worker.run();
await connection.close();
`;

const START = `// Starts the Smoke run of smoke-spec.ts and prints its summary once it completes.
import { MockworldClient } from 'mockworld/client';
import { smokeSpec } from './smoke-spec.js';

const mockworld = await MockworldClient.connect(); // TEMPORAL_ADDRESS, MOCKWORLD_TASK_QUEUE, ...
const run = await mockworld.start(smokeSpec, { id: process.argv[2] });
console.log(\`started \${run.workflowId}\`);
const summary = await run.result(); // typed by the spec's kind: SmokeSummary
console.log(JSON.stringify(summary));
await mockworld.close();
`;

const SPEC = `// A spec is one typed document; leave a field out to take its default. Other kinds:
// SynthesisSpecInput, GrpoSpecInput, EvaluationSpecInput, ... from 'mockworld/schemas'.
import type { SmokeSpecInput } from 'mockworld/schemas';

export const smokeSpec: SmokeSpecInput = {
  kind: 'Smoke',
  name: 'first-run',
  prompt: 'Say hello to mockworld in one short sentence.',
  steps: 2,
  // No model endpoint: MOCKWORLD_MODEL_URL / MOCKWORLD_MODEL_NAME, else the embedded model.
  model: { sampling: { maxTokens: 32 } },
};
`;

function readme(name: string): string {
  return `# ${name}

A mockworld worker project (made by \`mockworld init\`).

\`\`\`bash
npm install
npx mockworld stack up          # local Temporal dev server, UI, embedded model (or use your own)
DATABASE_URL=postgres://postgres@127.0.0.1:5432/mockworld npm run worker   # in one terminal
npm run smoke                   # in another: starts a Smoke run, prints its summary
\`\`\`

\`npm run typecheck\` checks the worker, the client script and the spec under \`strict\`.
`;
}
