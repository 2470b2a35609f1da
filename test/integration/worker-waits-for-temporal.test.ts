import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { freePort } from '../../testkit/ports.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';

/** A TCP forwarder from `port` to `target` (host:port): the Temporal frontend "coming up" there. */
async function forward(port: number, target: string): Promise<net.Server> {
  const [host, targetPort] = target.split(':');
  const server = net.createServer((socket) => {
    const upstream = net.connect(Number(targetPort), host);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

describe('a CPU worker started before Temporal is up', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let worker: WorkerProcess | undefined;
  let frontend: net.Server | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    models = await startModelServer();
  });
  afterAll(async () => {
    await worker?.kill();
    await new Promise((resolve) => (frontend ? frontend.close(resolve) : resolve(undefined)));
    await models?.close();
    await db?.drop();
  });

  it('says what it waits for, then serves once the frontend is there', async () => {
    const port = await freePort();
    const taskQueue = `wait-${randomBytes(4).toString('hex')}`;
    worker = startWorkerProcess({
      TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
      DATABASE_URL: db.url,
      MOCKWORLD_TASK_QUEUE: taskQueue,
    });
    let stderr = '';
    worker.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const deadline = Date.now() + 60_000;
    while (!/Temporal is not reachable/.test(stderr) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(stderr).toContain(`Temporal is not reachable at 127.0.0.1:${port}`);
    expect(stderr).toContain('mockworld stack up');
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(worker.child.exitCode).toBeNull(); // still waiting, not gone

    frontend = await forward(port, inject('temporalAddress'));
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const result = await new Client({ connection }).workflow.execute('Smoke', {
        args: [
          {
            prompt: 'served after the wait',
            steps: 1,
            model: { endpoint: { baseUrl: models.url, model: 'scripted' }, sampling: { maxTokens: 8 } },
          },
        ],
        taskQueue,
        workflowId: `${taskQueue}-smoke`,
        workflowExecutionTimeout: '2 minutes',
      });
      expect(result).toMatchObject({ steps: 1 });
    } finally {
      await connection.close();
    }
  });
  it('gives up waiting when told to stop', async () => {
    const waiting = startWorkerProcess({
      TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`,
      DATABASE_URL: db.url,
    });
    let stderr = '';
    waiting.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) =>
      waiting.child.once('exit', (code) => resolve(code)),
    );
    const deadline = Date.now() + 60_000;
    while (!/Waiting for it/.test(stderr) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    waiting.child.kill('SIGTERM');
    expect(await exited).not.toBe(0);
    expect(stderr).toContain('gave up waiting for Temporal');
  });
});
