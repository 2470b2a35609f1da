import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { eventually, freshNamespace } from '../../testkit/temporal.js';

const run = promisify(execFile);
const npmInstall = (cwd: string, ...args: string[]) =>
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...args], {
    cwd,
    maxBuffer: 64 * 1024 * 1024,
  });

/** The lowest version of mockworld's `@temporalio/*` peer range (package.json). */
const LOWEST_SDK = '1.24.0';
/** The peer SDK a worker and a client need, at the lowest of the range. */
const SDK = [`@temporalio/worker@${LOWEST_SDK}`, `@temporalio/client@${LOWEST_SDK}`];

/** Every `@temporalio/*` peer of mockworld, pinned at `version`. */
async function temporalPeersAt(version: string): Promise<string[]> {
  const manifest = JSON.parse(await readFile(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
    peerDependencies: Record<string, string>;
  };
  return Object.keys(manifest.peerDependencies)
    .filter((name) => name.startsWith('@temporalio/'))
    .map((name) => `${name}@${version}`);
}

/** The size of a project's node_modules with only that SDK, in MB. */
async function sdkAloneMegabytes(): Promise<number> {
  const baseline = await mkdtemp(path.join(os.tmpdir(), 'mockworld-sdk-only-'));
  try {
    await writeFile(path.join(baseline, 'package.json'), JSON.stringify({ name: 'sdk-only', private: true }));
    await npmInstall(baseline, ...SDK);
    return await megabytes(path.join(baseline, 'node_modules'));
  } finally {
    await rm(baseline, { recursive: true, force: true });
  }
}

/** `du -sm`: a folder's size on disk in MB. */
async function megabytes(dir: string): Promise<number> {
  const { stdout } = await run('du', ['-sm', dir]);
  return Number(stdout.split('\t')[0]);
}

/** The ```ts blocks of the README and of docs/own-worker.md: what a user copies into a worker. */
async function docBlocks(): Promise<string[]> {
  const pages = await Promise.all(
    ['README.md', 'docs/own-worker.md'].map((page) => readFile(path.join(REPO_ROOT, page), 'utf8')),
  );
  const blocks = pages.flatMap((text) => [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!));
  expect(blocks.length).toBeGreaterThanOrEqual(4);
  return blocks.map((block) => `${block}\nexport {};\n`); // each a module: top-level await
}

/**
 * The package as a user gets it: `npm pack` (which builds dist/), `mockworld init` writing a
 * worker project outside this repository that depends on the tarball, its install measured, its
 * code and the docs' snippets type-checked under strict, its worker and its client script run to
 * a completed Smoke run on a namespace that has never seen mockworld (no search attributes), read
 * back through the package's compiled CLI; then the same with the lowest `@temporalio/*` of the
 * peer range when the newest differs from it.
 */
describe('the packed mockworld package in a project made by mockworld init', () => {
  let root: string;
  let project: string;
  let db: TestDatabase;
  let models: ModelServer;
  let worker: ChildProcess | undefined;
  let namespace: string;
  const taskQueue = `pack-${process.pid}-${Date.now()}`;
  const env = () => ({
    ...process.env,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: namespace,
    DATABASE_URL: db.url,
    MOCKWORLD_TASK_QUEUE: taskQueue,
    MOCKWORLD_MODEL_URL: models.url,
    MOCKWORLD_MODEL_NAME: 'mock-model',
  });

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'mockworld-user-'));
    project = path.join(root, 'my-workers');
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      namespace = await freshNamespace(connection, 'mw-pack');
    } finally {
      await connection.close();
    }
    db = await createTestDatabase();
    models = await startModelServer({ script: () => ({ content: 'hello from the scripted model' }) });
  });
  afterAll(async () => {
    await stopWorker();
    await models?.close();
    await db?.drop();
    await rm(root, { recursive: true, force: true });
  });

  async function stopWorker(): Promise<void> {
    const running = worker;
    worker = undefined;
    if (running && running.exitCode === null && running.signalCode === null) {
      const gone = new Promise((resolve) => running.once('exit', resolve));
      process.kill(-running.pid!, 'SIGTERM'); // its group: npm, tsx and the node process under them
      await gone;
    }
  }

  /** The project's installed `@temporalio/worker` version. */
  const installedSdk = async () =>
    (
      JSON.parse(
        await readFile(path.join(project, 'node_modules/@temporalio/worker/package.json'), 'utf8'),
      ) as { version: string }
    ).version;

  /** The project type-checks, and its worker and client script complete a Smoke run. */
  async function typecheckAndSmoke(): Promise<void> {
    await run('npm', ['run', 'typecheck'], { cwd: project }).catch((error: Error & { stdout?: string }) => {
      throw new Error(`the scaffold or the docs' TypeScript does not compile:\n${error.stdout}`);
    });
    worker = spawn('npm', ['run', 'worker'], {
      cwd: project,
      env: env(),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // a process group of its own, ended whole
    });
    let workerLog = '';
    worker.stdout!.on('data', (chunk: Buffer) => (workerLog += chunk.toString()));
    worker.stderr!.on('data', (chunk: Buffer) => (workerLog += chunk.toString()));
    await eventually(async () => workerLog.includes(`worker polling ${taskQueue}`), 120_000);

    const workflowId = `packed-smoke-${Date.now()}`;
    const started = await run('npm', ['run', 'smoke', '--', workflowId], { cwd: project, env: env() }).catch(
      (error: Error) => {
        throw new Error(`${error.message}\nworker log:\n${workerLog}`);
      },
    );
    expect(JSON.parse(started.stdout.trim().split('\n').pop()!)).toMatchObject({ steps: 2 });
    const rows = await query(db.url, 'SELECT kind, status FROM runs WHERE run_id = $1', [workflowId]);
    expect(rows).toEqual([{ kind: 'Smoke', status: 'completed' }]);

    // The compiled CLI the package installs as its bin.
    const status = await run(
      path.join(project, 'node_modules', '.bin', 'mockworld'),
      ['status', workflowId, '--json'],
      { cwd: project, env: env() },
    );
    expect(JSON.parse(status.stdout)).toMatchObject({ workflowId, temporalStatus: 'COMPLETED' });
    await stopWorker();
  }

  it('packs lean, scaffolds, installs, type-checks and completes a Smoke run', async () => {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', root], {
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

    const init = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        'cli/main.ts',
        'init',
        project,
        '--mockworld',
        `file:${path.join(root, packed!.filename)}`,
      ],
      { cwd: REPO_ROOT },
    );
    expect(init.stdout).toContain('worker.ts');

    // Lean: the embedded model's runtime (node-llama-cpp, ~700 MB) is an optional peer installed on
    // first use; the Temporal SDK is a peer the project shares (its core bridge ships five
    // platforms' binaries, ~140 MB, whatever installs it).
    await npmInstall(project, '--omit=dev');
    expect(await readdir(path.join(project, 'node_modules'))).not.toContain('node-llama-cpp');
    const total = await megabytes(path.join(project, 'node_modules'));
    const sdk = await sdkAloneMegabytes();
    console.log(`node_modules: ${total} MB; a project with only the Temporal SDK: ${sdk} MB`);
    expect(total - sdk).toBeLessThan(150);

    // The scaffold and the docs' TypeScript, as a user pastes it, compile under strict.
    await npmInstall(project);
    const blocks = await docBlocks();
    for (const [index, block] of blocks.entries())
      await writeFile(path.join(project, `doc-${index}.ts`), block);
    const newest = await installedSdk();
    console.log(`@temporalio/* ${newest}, the newest of the peer range`);
    await typecheckAndSmoke();

    // The lowest of the peer range: a team on an older SDK gets one copy of it, and it works.
    if (newest === LOWEST_SDK) console.log(`the peer range's newest is its lowest (${LOWEST_SDK}) today`);
    else {
      await npmInstall(project, ...(await temporalPeersAt(LOWEST_SDK)));
      expect(await installedSdk()).toBe(LOWEST_SDK);
      await typecheckAndSmoke();
    }
  }, 900_000);
});
