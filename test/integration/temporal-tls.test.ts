import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import {
  makeTestCertificates,
  startTlsFront,
  type TestCertificates,
  type TlsFront,
} from '../../testkit/tls.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';

const exec = promisify(execFile);

/**
 * A secured Temporal: the shared dev server behind mutual TLS (certificates made here with
 * openssl). The CLI, a CPU worker and the trainer's connection reach it with nothing but
 * Temporal's environment configuration: variables for the worker and the trainer, a profile file
 * for the CLI. Without a client certificate, or without TLS, nothing gets through.
 */
describe('Temporal behind mutual TLS, through the environment configuration only', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let certs: TestCertificates;
  let front: TlsFront;
  let worker: WorkerProcess | undefined;
  const taskQueue = `tls-${randomBytes(4).toString('hex')}`;

  /** Temporal's TLS variables for `front` (no profile file: the machine's own must not count). */
  const tlsVariables = () => ({
    TEMPORAL_CONFIG_FILE: path.join(certs.dir, 'absent.toml'),
    TEMPORAL_ADDRESS: front.address,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.caCert,
    TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    models = await startModelServer();
    certs = await makeTestCertificates();
    front = await startTlsFront(inject('temporalAddress'), certs);
  });
  afterAll(async () => {
    await worker?.kill();
    await front?.close();
    await certs?.remove();
    await models?.close();
    await db?.drop();
  });

  it('a worker (variables) serves a run the CLI (a profile) starts and waits for', async () => {
    worker = startWorkerProcess({ ...tlsVariables(), DATABASE_URL: db.url, MOCKWORLD_TASK_QUEUE: taskQueue });
    const profile = path.join(certs.dir, 'temporal.toml');
    await writeFile(
      profile,
      [
        '[profile.secured]',
        `address = "${front.address}"`,
        'namespace = "default"',
        '[profile.secured.tls]',
        `server_ca_cert_path = "${certs.caCert}"`,
        `client_cert_path = "${certs.clientCert}"`,
        `client_key_path = "${certs.clientKey}"`,
        'server_name = "localhost"',
      ].join('\n'),
    );
    const spec = path.join(certs.dir, 'smoke.json');
    await writeFile(
      spec,
      JSON.stringify({
        kind: 'Smoke',
        steps: 1,
        model: { endpoint: { baseUrl: models.url, model: 'scripted' } },
      }),
    );
    const id = `${taskQueue}-smoke`;
    const cliEnv = {
      TEMPORAL_CONFIG_FILE: profile,
      TEMPORAL_PROFILE: 'secured',
      DATABASE_URL: db.url,
      MOCKWORLD_TASK_QUEUE: taskQueue,
    };
    const started = await runCli(cliEnv, 'start', spec, '--id', id, '--wait', '--json');
    expect(started.stderr).not.toMatch(/not reachable/);
    expect(started.code).toBe(0);
    expect(JSON.parse(started.stdout)).toMatchObject({ workflowId: id, result: { steps: 1 } });

    const status = await runCli(cliEnv, 'status', id, '--json');
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ workflowId: id, temporalStatus: 'COMPLETED' });
    // Both came through the front with the test's client certificate.
    expect(front.clients.length).toBeGreaterThanOrEqual(2);
    expect(new Set(front.clients)).toEqual(new Set(['mockworld-test-client']));
  });

  it("the trainer's connection reads the same variables", async () => {
    const { stdout } = await exec(
      path.join(REPO_ROOT, '.venv-trainer', 'bin', 'python'),
      ['-m', 'mockworld_trainer.temporal_connection'],
      { cwd: path.join(REPO_ROOT, 'workers', 'trainer'), env: { ...process.env, ...tlsVariables() } },
    );
    expect(stdout).toContain(`reached Temporal`);
    expect(stdout).toContain(`${front.address} (namespace 'default', TLS)`);
  });

  it('without a client certificate, or without TLS, the CLI is refused and says what to set', async () => {
    const refusedBefore = front.refused();
    const {
      TEMPORAL_TLS_CLIENT_CERT_PATH: _cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: _key,
      ...noClientCert
    } = tlsVariables();
    const noCert = await runCli(noClientCert, 'status', 'any-run');
    expect(noCert.code).toBe(1);
    expect(noCert.stderr).toContain(`Temporal is not reachable at ${front.address} (TLS;`);
    expect(noCert.stderr).toContain('TEMPORAL_TLS_CLIENT_CERT_PATH');

    const plain = await runCli(
      { TEMPORAL_CONFIG_FILE: tlsVariables().TEMPORAL_CONFIG_FILE, TEMPORAL_ADDRESS: front.address },
      'status',
      'any-run',
    );
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain(`Temporal is not reachable at ${front.address} (plaintext;`);
    expect(front.refused()).toBeGreaterThan(refusedBefore);
  });
});
