import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs, tsToMs } from '@temporalio/common';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { eventually } from '../../testkit/temporal.js';

const { CommandType, TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;
const NAMESPACE = 'default';

/** A process as /proc shows it; the start time tells a PID apart from a later process reusing it. */
interface ProcEntry {
  readonly pid: number;
  readonly ppid: number;
  readonly startTime: string;
  readonly cmdline: string;
  /** The executable's path. */
  readonly exe: string;
}

function readProc(pid: number): ProcEntry | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: fields follow its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    const exe = readlinkSync(`/proc/${pid}/exe`);
    return { pid, ppid: Number(fields[1]), startTime: fields[19] ?? '', cmdline, exe };
  } catch {
    return undefined; // gone, or went while being read
  }
}

/** Every process below `pid` (children, their children, ...), from the ppid of each /proc entry. */
function descendants(pid: number): ProcEntry[] {
  const all = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readProc(Number(name)))
    .filter((entry): entry is ProcEntry => entry !== undefined);
  const found: ProcEntry[] = [];
  for (let parents = new Set([pid]); parents.size > 0;) {
    const next = all.filter((entry) => parents.has(entry.ppid));
    found.push(...next);
    parents = new Set(next.map((entry) => entry.pid));
  }
  return found;
}

/** Whether the very process recorded in `entry` still exists (not a later one with its PID). */
function stillAlive(entry: ProcEntry): boolean {
  return readProc(entry.pid)?.startTime === entry.startTime;
}

async function pollers(connection: Connection, taskQueue: string) {
  const describe = async (taskQueueType: proto.temporal.api.enums.v1.TaskQueueType) =>
    (
      await connection.workflowService.describeTaskQueue({
        namespace: NAMESPACE,
        taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType,
      })
    ).pollers ?? [];
  return {
    workflow: await describe(TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW),
    activity: await describe(TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY),
  };
}

describe('mockworld worker under SIGKILL of its PID', () => {
  let db: TestDatabase;
  let home: string;
  let connection: Connection;
  let worker: ChildProcess | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    home = await mkdtemp(path.join(os.tmpdir(), 'mockworld-pid-kill-'));
    connection = await Connection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    if (worker && worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    await connection?.close();
    await db?.drop();
    await rm(home, { recursive: true, force: true });
  });

  it('is one process, and killing that PID leaves nothing polling the task queue', async () => {
    const taskQueue = `pid-kill-${randomBytes(4).toString('hex')}`;
    worker = spawn(path.join(REPO_ROOT, 'bin', 'mockworld'), ['worker', '--task-queue', taskQueue], {
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        DATABASE_URL: db.url,
        MOCKWORLD_HOME: home,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    worker.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      worker!.once('exit', (_code, signal) => resolve(signal)),
    );
    const pid = worker.pid!;
    // The SDK's default worker identity: the PID a supervisor holds must be the one polling.
    const identity = `${pid}@${os.hostname()}`;

    let seen = { workflow: [] as string[], activity: [] as string[] };
    await eventually(async () => {
      if (worker!.exitCode !== null) throw new Error(`mockworld worker exited early:\n${stderr}`);
      const found = await pollers(connection, taskQueue);
      seen = {
        workflow: found.workflow.map((p) => p.identity ?? ''),
        activity: found.activity.map((p) => p.identity ?? ''),
      };
      return seen.workflow.includes(identity) && seen.activity.includes(identity);
    }, 120_000).catch((error: Error) => {
      // A launcher whose child does the work polls under the child's PID, not the one we hold.
      throw new Error(`${error.message}: no poller ${identity}; pollers seen: ${JSON.stringify(seen)}`);
    });

    // One process: the PID runs the CLI itself (bash exec'd node), with no node child doing the
    // work. (From a checkout, tsx keeps an esbuild service as a child; it is no node and exits
    // when its parent does, which the check after the kill sees.)
    const self = readProc(pid)!;
    expect(path.basename(self.exe)).toMatch(/^node/);
    expect(self.cmdline).toContain(path.join('cli', 'main'));
    const below = descendants(pid);
    expect(below.filter((p) => /^node/.test(path.basename(p.exe)))).toEqual([]);

    worker.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(stillAlive(self)).toBe(false);
    // A child outliving the killed PID is what this guards against; any there must go by itself.
    await eventually(async () => below.every((p) => !stillAlive(p)), 30_000);

    // describeTaskQueue lists pollers seen in the last few minutes (the server keeps a history, and
    // stamps a poll again when it ends, as the dead worker's did when its connection dropped), so
    // the list cannot say who is still polling. A task can: scheduled after the kill, a live poller
    // of the killed worker would take it at once; instead a probe polling only now gets it, first
    // attempt. Done for a workflow task and, scheduled by the probe, for an activity task.
    const probe = `probe-${randomBytes(4).toString('hex')}`;
    const workflowId = `${taskQueue}-probe`;
    // The server refuses a poll without a deadline; the task is already waiting, so this is a bound.
    const longPoll = <T>(poll: () => Promise<T>) => connection.withDeadline(Date.now() + 70_000, poll);
    await connection.workflowService.startWorkflowExecution({
      namespace: NAMESPACE,
      workflowId,
      requestId: randomBytes(16).toString('hex'),
      workflowType: { name: 'PidKillProbe' },
      taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      workflowRunTimeout: msToTs('5 minutes'),
      identity: probe,
    });
    try {
      const workflowTask = await longPoll(() =>
        connection.workflowService.pollWorkflowTaskQueue({
          namespace: NAMESPACE,
          taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          identity: probe,
        }),
      );
      expect(workflowTask.workflowExecution?.workflowId).toBe(workflowId);
      expect(workflowTask.attempt).toBe(1);
      await connection.workflowService.respondWorkflowTaskCompleted({
        namespace: NAMESPACE,
        taskToken: workflowTask.taskToken,
        identity: probe,
        commands: [
          {
            commandType: CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
            scheduleActivityTaskCommandAttributes: {
              activityId: 'probe',
              activityType: { name: 'PidKillProbe' },
              taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
              startToCloseTimeout: msToTs('5 minutes'),
            },
          },
        ],
      });
      const activityTask = await longPoll(() =>
        connection.workflowService.pollActivityTaskQueue({
          namespace: NAMESPACE,
          taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          identity: probe,
        }),
      );
      expect(activityTask.workflowExecution?.workflowId).toBe(workflowId);
      expect(activityTask.attempt).toBe(1);

      // And by then the killed identity has not polled: its last access (the poll that ended with
      // its connection) precedes the probe's activity task (server clock on both sides).
      const probedAt = tsToMs(activityTask.startedTime!);
      const after = await pollers(connection, taskQueue);
      const killed = [...after.workflow, ...after.activity].filter((p) => p.identity === identity);
      for (const entry of killed) expect(tsToMs(entry.lastAccessTime!)).toBeLessThanOrEqual(probedAt);
      expect(after.activity.some((p) => p.identity === probe)).toBe(true);
    } finally {
      await connection.workflowService
        .terminateWorkflowExecution({
          namespace: NAMESPACE,
          workflowExecution: { workflowId },
          reason: 'probe done',
        })
        .catch(() => undefined);
    }
  });
});
