import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { freePort } from '../../testkit/ports.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';

const exec = promisify(execFile);

/**
 * Encrypted payloads everywhere a user looks: `mockworld stack up` with MOCKWORLD_PAYLOAD_KEY set
 * starts the codec server and a dev server whose UI decodes through it; a Python SDK client
 * (examples/clients/remote_codec.py) starts a run and reads its result through the codec server,
 * and the Temporal CLI shows the history decoded with --codec-endpoint (ciphertext without it).
 */
describe('stack up with payload encryption', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let home: string;
  let worker: WorkerProcess | undefined;
  let env: Record<string, string>;
  let ports: { temporal: number; ui: number; codec: number };

  beforeAll(async () => {
    db = await createTestDatabase();
    models = await startModelServer();
    home = await mkdtemp(path.join(os.tmpdir(), 'mockworld-codec-stack-'));
    ports = { temporal: await freePort(), ui: await freePort(), codec: await freePort() };
    env = {
      MOCKWORLD_HOME: home,
      DATABASE_URL: db.url,
      TEMPORAL_CONFIG_FILE: path.join(home, 'absent.toml'),
      TEMPORAL_ADDRESS: `127.0.0.1:${ports.temporal}`,
      TEMPORAL_UI_PORT: String(ports.ui),
      MOCKWORLD_CODEC_PORT: String(ports.codec),
      MOCKWORLD_PAYLOAD_KEY: randomBytes(32).toString('base64'),
      MOCKWORLD_MODEL_URL: models.url, // no embedded model for this test
      MOCKWORLD_MODEL_NAME: 'scripted',
      TEMPORAL_CLI: inject('temporalCli'),
      MOCKWORLD_TASK_QUEUE: `codec-${randomBytes(4).toString('hex')}`,
    };
  });
  afterAll(async () => {
    await worker?.kill();
    if (env) await runCli(env, 'stack', 'down');
    await models?.close();
    await db?.drop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it('starts the UI with the codec endpoint set, and the codec server answers the UI', async () => {
    const up = await runCli(env, 'stack', 'up');
    expect(up.stderr).toBe('');
    expect(up.code).toBe(0);
    const codec = `http://127.0.0.1:${ports.codec}`;
    expect(up.stdout).toContain(`codec      ${codec}  started`);
    expect(up.stdout).toContain(`ui         http://localhost:${ports.ui}\n`);
    // Up again, told of a UI port nothing serves: it says so instead of printing a dead link.
    const elsewhere = await runCli({ ...env, TEMPORAL_UI_PORT: String(await freePort()) }, 'stack', 'up');
    expect(elsewhere.stdout).toMatch(/ui +nothing answers at http:\/\/localhost:\d+; .*set TEMPORAL_UI_PORT/);

    const settings = (await (await fetch(`http://127.0.0.1:${ports.ui}/api/v1/settings`)).json()) as {
      Codec: { Endpoint: string };
    };
    expect(settings.Codec.Endpoint).toBe(codec);
    // The browser calls it from the UI's origin: the preflight and the answer allow that origin.
    const origin = `http://localhost:${ports.ui}`;
    const preflight = await fetch(`${codec}/decode`, { method: 'OPTIONS', headers: { Origin: origin } });
    expect(preflight.headers.get('access-control-allow-origin')).toBe(origin);

    const status = await runCli(env, 'stack', 'status', '--json');
    expect(JSON.parse(status.stdout)).toContainEqual(
      expect.objectContaining({ component: 'codec', state: 'up' }),
    );
  });

  it('a Python SDK client starts a run and reads its result; the CLI decodes the history', async () => {
    worker = startWorkerProcess(env);
    const spec = path.join(home, 'smoke.json');
    await writeFile(
      spec,
      JSON.stringify({
        kind: 'Smoke',
        prompt: 'a secret prompt 4711',
        steps: 1,
        model: { sampling: { maxTokens: 8 } },
      }),
    );
    const id = `py-codec-${randomBytes(4).toString('hex')}`;
    const { MOCKWORLD_PAYLOAD_KEY: _key, ...withoutKey } = env; // the Python side never holds the key
    const { stdout } = await exec(
      path.join(REPO_ROOT, '.venv-trainer', 'bin', 'python'),
      [
        path.join(REPO_ROOT, 'examples', 'clients', 'remote_codec.py'),
        'start',
        spec,
        '--id',
        id,
        '--task-queue',
        env.MOCKWORLD_TASK_QUEUE!,
        '--wait',
      ],
      {
        env: { ...process.env, ...withoutKey, MOCKWORLD_CODEC_URL: `http://127.0.0.1:${ports.codec}` },
        timeout: 120_000,
      },
    );
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.at(-1)).toMatchObject({ workflowId: id, result: { steps: 1 } });

    const show = (...extra: string[]) =>
      exec(inject('temporalCli'), [
        'workflow',
        'show',
        '-w',
        id,
        '--address',
        env.TEMPORAL_ADDRESS!,
        '-o',
        'json',
        ...extra,
      ]);
    // JSON output carries payload data as base64: read every payload's data back as text.
    const payloadTexts = (json: string) =>
      [...json.matchAll(/"data": "([A-Za-z0-9+/=]*)"/g)].map((m) => Buffer.from(m[1]!, 'base64').toString());
    const decoded = await show('--codec-endpoint', `http://127.0.0.1:${ports.codec}`);
    expect(payloadTexts(decoded.stdout).join('\n')).toContain('a secret prompt 4711');
    const raw = await show();
    expect(payloadTexts(raw.stdout).join('\n')).not.toContain('a secret prompt 4711');
    expect(raw.stdout).toContain(Buffer.from('binary/encrypted').toString('base64'));
  });
});
