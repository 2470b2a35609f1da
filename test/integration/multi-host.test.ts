import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startModelGateway, type ModelGateway } from '../../services/gateway/model-gateway.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import {
  createHostNetwork,
  hostNetworkUnsupported,
  type HostNetwork,
  type TestHost,
} from '../../testkit/hosts.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { startOwnTemporal, type OwnTemporal } from '../../testkit/own-temporal.js';
import { startPostgresInstance, type PostgresInstance } from '../../testkit/postgres-instance.js';
import { scriptedOutcome, scriptedPersonas, synthesisScript } from '../../testkit/synthesis-script.js';
import { eventually } from '../../testkit/temporal.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';

const TASKS = 16;
const DEMONSTRATIONS = 2;
const WORKFLOW_ID = 'synthesis-across-hosts';
/** Longer than the model activities' 20 s heartbeat timeout: the cut host's work must move. */
const CUT_MS = 30_000;
const STARTED = proto.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
const unsupported = await hostNetworkUnsupported();

/**
 * A Synthesis run on two worker hosts (network namespaces, testkit/hosts.ts) served by a third
 * (Temporal, PostgreSQL and the model gateway on the bridge). Host B joins the run under way and
 * takes work at once; then its link goes down for 30 s while it runs an activity: its worker keeps
 * running, blind. Its heartbeats stop reaching Temporal, so the activity runs again on host A;
 * when the link comes back, its late writes and its completion land on work already done, and B
 * takes work again. Then host A is lost, every process at once, and its activities move to B. The
 * run ends with every task once, every demonstration once, and every model answer paid once.
 */
describe.skipIf(unsupported)('a run across hosts, one cut off and one lost', () => {
  let dir: string;
  let network: HostNetwork;
  let postgres: PostgresInstance;
  let db: TestDatabase;
  let temporal: OwnTemporal;
  let models: ModelServer;
  let gateway: ModelGateway;
  const workers: WorkerProcess[] = [];
  const taskQueue = 'multi-host';
  const authorization = randomBytes(16).toString('hex');

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-hosts-'));
    await writeFile(path.join(dir, 'personas.jsonl'), scriptedPersonas(TASKS, false));
    network = await createHostNetwork(['worker-a', 'worker-b']);
    const server = network.serverAddress;
    postgres = await startPostgresInstance({ network: { address: server, allow: network.subnet } });
    db = await createTestDatabase('mw_hosts', postgres.adminUrl);
    temporal = await startOwnTemporal(inject('temporalCli'), dir, server);
    // Answers slow enough that a host is always cut with a call in flight.
    models = await startModelServer({ script: synthesisScript, latencyMs: 1000 });
    gateway = await startModelGateway({ databaseUrl: db.url, port: 0, host: server, authorization });
  });
  afterAll(async () => {
    for (const worker of workers) await worker.kill();
    await network?.teardown();
    await temporal?.stop();
    await gateway?.close();
    await models?.close();
    await db?.drop();
    await postgres?.remove();
    await rm(dir, { recursive: true, force: true });
  });

  /** The database as the worker hosts reach it: over the bridge, not loopback. */
  const overTheBridge = (url: string) => {
    const u = new URL(url);
    u.hostname = network.serverAddress;
    return u.toString();
  };

  it('ends with every task, demonstration and answer once after a link cut and a lost host', async () => {
    const startWorkerOn = (host: TestHost) =>
      startWorkerProcess(
        {
          TEMPORAL_ADDRESS: temporal.address,
          DATABASE_URL: overTheBridge(db.url),
          MOCKWORLD_TASK_QUEUE: taskQueue,
          MOCKWORLD_HOME: dir,
          MOCKWORLD_MODEL_GATEWAY_URL: gateway.url,
          MOCKWORLD_MODEL_GATEWAY_AUTH: authorization,
        },
        'workers/cpu-worker',
        host.launcher,
      );
    const identity = (worker: WorkerProcess) => `${worker.child.pid}@${os.hostname()}`;
    workers.push(startWorkerOn(network.hosts[0]!));
    const connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection });
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    const handle = await client.workflow.start('Synthesis', {
      args: [
        {
          personas: { path: path.join(dir, 'personas.jsonl') },
          tasks: TASKS,
          demonstrationsPerTask: DEMONSTRATIONS,
          maxTurns: 6,
          concurrency: 4,
          models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
        },
      ],
      taskQueue,
      workflowId: WORKFLOW_ID,
    });
    const taskHandle = (i: number) =>
      client.workflow.getHandle(`${WORKFLOW_ID}-task-${String(i).padStart(5, '0')}`);

    /** Activities that Temporal holds as started by this worker identity and still running. */
    const startedBy = async (identity: string) => {
      let started = 0;
      for (let i = 0; i < TASKS; i++) {
        const pending = await taskHandle(i)
          .describe()
          .then((d) => d.raw.pendingActivities ?? [])
          .catch(() => []);
        started += pending.filter((p) => p.lastWorkerIdentity === identity && p.state === STARTED).length;
      }
      return started;
    };
    // Host B joins the run under way and takes work from its queue as soon as it polls.
    workers.push(startWorkerOn(network.hosts[1]!));
    const [a, b] = workers.map(identity) as [string, string];
    // Cut B's link under a running activity (Temporal still holds one as B's once the link is
    // down; one B finished just before is no cut under it, so that try is healed and repeated).
    for (let attempt = 1; ; attempt++) {
      await eventually(async () => (await startedBy(b)) > 0, 120_000, 100);
      await network.hosts[1]!.cut();
      if ((await startedBy(b)) > 0) break;
      await network.hosts[1]!.heal();
      if (attempt === 5) throw new Error('host B never held an activity when its link went down');
    }
    await new Promise((resolve) => setTimeout(resolve, CUT_MS));
    await network.hosts[1]!.heal();
    // Back on the network, B takes work again; then host A is lost with all its processes while
    // it runs activities (two, so that one finishing at that instant still leaves one lost).
    await eventually(async () => (await startedBy(b)) > 0, 120_000, 100);
    await eventually(async () => (await startedBy(a)) > 1, 120_000, 100);
    expect(await network.hosts[0]!.killAll()).toContain(workers[0]!.child.pid);

    const summary = await handle.result();
    const kept = Array.from({ length: TASKS }, (_, i) => scriptedOutcome(i)).filter(
      (o) => o === 'kept',
    ).length;
    expect(summary).toMatchObject({ tasks: TASKS, kept, failed: 0 });
    // The blind worker lived through the cut; nothing killed it.
    expect(workers[1]!.child.exitCode).toBeNull();

    // Each host's cut-off or lost activity timed out on its heartbeat and ran again on the other.
    const movedTo: Record<string, number> = {};
    for (let i = 0; i < TASKS; i++) {
      for (const event of (await taskHandle(i).fetchHistory()).events ?? []) {
        const started = event.activityTaskStartedEventAttributes;
        if (started?.lastFailure?.timeoutFailureInfo && started.identity)
          movedTo[started.identity] = (movedTo[started.identity] ?? 0) + 1;
      }
    }
    expect(movedTo[a]).toBeGreaterThan(0); // B's, cut off
    expect(movedTo[b]).toBeGreaterThan(0); // A's, lost

    // Every task once, every demonstration once, every answer paid once.
    const tasks = await query<{ n: number; distinct: number }>(
      db.url,
      'SELECT count(*)::int AS n, count(DISTINCT idx)::int AS distinct FROM tasks',
    );
    expect(tasks).toEqual([{ n: TASKS, distinct: TASKS }]);
    const demonstrations = await query<{ task_id: string; n: number }>(
      db.url,
      `SELECT task_id, count(*)::int AS n FROM episodes WHERE purpose = 'demonstration'
        GROUP BY task_id HAVING count(*) > ${DEMONSTRATIONS}`,
    );
    expect(demonstrations).toEqual([]);
    const ledger = await query<{ role: string; n: number }>(
      db.url,
      'SELECT role, count(*)::int AS n FROM llm_calls GROUP BY role ORDER BY role',
    );
    expect(Object.fromEntries(ledger.map((r) => [r.role, r.n]))).toEqual(models.stats.answeredByRole);
    await connection.close();
  }, 600_000);
});
