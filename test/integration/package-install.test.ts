import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';

const run = promisify(execFile);

/** The size of a project's node_modules with only the SDK a worker and a client need. */
async function sdkAloneMegabytes(): Promise<number> {
  const baseline = await mkdtemp(path.join(os.tmpdir(), 'mockworld-sdk-only-'));
  try {
    await writeFile(path.join(baseline, 'package.json'), JSON.stringify({ name: 'sdk-only', private: true }));
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...SDK], { cwd: baseline });
    return await megabytes(path.join(baseline, 'node_modules'));
  } finally {
    await rm(baseline, { recursive: true, force: true });
  }
}

/** What a TypeScript project adds to compile, at the versions this repository builds with. */
const TYPESCRIPT = ['typescript@5.9.3', '@types/node@20.19.43'];

/** The ```ts blocks of the README and of docs/own-worker.md: what a user copies into a worker. */
async function docBlocks(): Promise<string[]> {
  const pages = await Promise.all(
    ['README.md', 'docs/own-worker.md'].map((page) => readFile(path.join(REPO_ROOT, page), 'utf8')),
  );
  const blocks = pages.flatMap((text) => [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!));
  expect(blocks.length).toBeGreaterThanOrEqual(4);
  return blocks.map((block) => `${block}\nexport {};\n`); // each a module: top-level await
}

/** The peer SDK the user's project installs beside mockworld: the lowest of the peer range. */
const SDK = ['@temporalio/worker@1.24.0', '@temporalio/client@1.24.0'];

/** `du -sm`: a folder's size on disk in MB. */
async function megabytes(dir: string): Promise<number> {
  const { stdout } = await run('du', ['-sm', dir]);
  return Number(stdout.split('\t')[0]);
}

/**
 * The package as a user gets it: `npm pack` (which builds dist/), the tarball installed into a
 * fresh project outside this repository, a worker built there with the plugin, and a Smoke run
 * started through the package's client and read back through its compiled CLI.
 */
describe('the packed mockworld package in a project of its own', () => {
  let project: string;
  let db: TestDatabase;
  let models: ModelServer;
  let worker: ChildProcess | undefined;
  const taskQueue = `pack-${process.pid}-${Date.now()}`;
  const env = () => ({
    ...process.env,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    DATABASE_URL: db.url,
    MOCKWORLD_TASK_QUEUE: taskQueue,
    MOCKWORLD_MODEL_URL: models.url,
    MOCKWORLD_MODEL_NAME: 'mock-model',
  });

  beforeAll(async () => {
    project = await mkdtemp(path.join(os.tmpdir(), 'mockworld-user-project-'));
    db = await createTestDatabase();
    models = await startModelServer({ script: () => ({ content: 'hello from the scripted model' }) });
  });
  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      const gone = new Promise((resolve) => worker!.once('exit', resolve));
      worker.kill('SIGTERM');
      await gone;
    }
    await models?.close();
    await db?.drop();
    await rm(project, { recursive: true, force: true });
  });

  it('installs from its tarball, runs a worker with the plugin, and completes a Smoke run', async () => {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', project], {
      cwd: REPO_ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as {
      filename: string;
      files: { path: string }[];
    }[];
    const shipped = packed!.files.map((file) => file.path);
    expect(shipped).toContain('dist/workers/plugin.js');
    expect(shipped).toContain('dist/workers/plugin.d.ts');
    expect(shipped).toContain('dist/cli/main.js');
    expect(shipped.filter((file) => file.startsWith('test/') || file.startsWith('bench/'))).toEqual([]);
    expect(shipped.filter((file) => /(^|\/)tests\/|\.map$/.test(file))).toEqual([]); // Python tests, maps

    await writeFile(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'my-workers', private: true, type: 'module' }),
    );
    await run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${packed!.filename}`, ...SDK],
      { cwd: project, maxBuffer: 64 * 1024 * 1024 },
    );
    expect(await readdir(path.join(project, 'node_modules', 'mockworld', 'dist'))).toContain('index.js');
    // Lean: the embedded model's runtime (node-llama-cpp, ~700 MB) is an optional peer, installed
    // on first use; the Temporal SDK is a peer the project shares (its core bridge ships five
    // platforms' binaries, ~140 MB, whatever installs it).
    expect(await readdir(path.join(project, 'node_modules'))).not.toContain('node-llama-cpp');
    const total = await megabytes(path.join(project, 'node_modules'));
    const sdk = await sdkAloneMegabytes();
    console.log(`node_modules: ${total} MB; a project with only the Temporal SDK: ${sdk} MB`);
    expect(total - sdk).toBeLessThan(150);

    // The docs' TypeScript, as a user pastes it, compiles under strict against the package.
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...TYPESCRIPT], {
      cwd: project,
    });
    const blocks = await docBlocks();
    for (const [index, block] of blocks.entries())
      await writeFile(path.join(project, `doc-${index}.ts`), block);
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'nodenext',
          target: 'es2022',
          noEmit: true,
          types: ['node'],
        },
        files: blocks.map((_, index) => `doc-${index}.ts`),
      }),
    );
    await run(path.join(project, 'node_modules', '.bin', 'tsc'), ['-p', '.'], { cwd: project }).catch(
      (error: Error & { stdout?: string }) => {
        throw new Error(`the docs' TypeScript does not compile:\n${error.stdout}`);
      },
    );

    // A worker of the user's own, registering the plugin by the package name.
    await writeFile(
      path.join(project, 'worker.mjs'),
      `import { NativeConnection, Worker } from '@temporalio/worker';
import { MockworldPlugin } from 'mockworld/plugin';
const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS });
const worker = await Worker.create({
  connection,
  taskQueue: process.env.MOCKWORLD_TASK_QUEUE,
  plugins: [new MockworldPlugin({ databaseUrl: process.env.DATABASE_URL })],
});
console.log('worker ready');
await worker.run();
await connection.close();
`,
    );
    await writeFile(
      path.join(project, 'start.mjs'),
      `import { MockworldClient } from 'mockworld/client';
const mockworld = await MockworldClient.connect();
const run = await mockworld.start({
  kind: 'Smoke', name: 'packed', prompt: 'hello', steps: 2, model: { sampling: { maxTokens: 16 } },
}, { id: process.argv[2] });
console.log(JSON.stringify(await run.result()));
await mockworld.close();
`,
    );
    worker = spawn(process.execPath, ['worker.mjs'], {
      cwd: project,
      env: env(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let workerLog = '';
    worker.stdout!.on('data', (chunk: Buffer) => (workerLog += chunk.toString()));
    worker.stderr!.on('data', (chunk: Buffer) => (workerLog += chunk.toString()));

    const workflowId = `packed-smoke-${Date.now()}`;
    const started = await run(process.execPath, ['start.mjs', workflowId], {
      cwd: project,
      env: env(),
    }).catch((error: Error) => {
      throw new Error(`${error.message}\nworker log:\n${workerLog}`);
    });
    expect(JSON.parse(started.stdout.trim().split('\n').pop()!)).toMatchObject({ steps: 2 });
    const rows = await query(db.url, 'SELECT kind, status FROM runs WHERE run_id = $1', [workflowId]);
    expect(rows).toEqual([{ kind: 'Smoke', status: 'completed' }]);

    // The compiled CLI the package installs as its bin.
    const status = await run(
      path.join(project, 'node_modules', '.bin', 'mockworld'),
      ['status', workflowId, '--json'],
      {
        cwd: project,
        env: env(),
      },
    );
    expect(JSON.parse(status.stdout)).toMatchObject({ workflowId, temporalStatus: 'COMPLETED' });
  }, 900_000);
});
