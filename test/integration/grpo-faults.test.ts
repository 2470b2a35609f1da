import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { describe, expect, inject, it } from 'vitest';
import { JUDGE_CONTROL_ROLE } from '../../activities/reward/rubric-controls.js';
import { startCountingProxy, type CountingProxy } from '../../testkit/counting-proxy.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import {
  fixturePolicy,
  fixtureTaskId,
  grpoFixtureScript,
  insertFixtureTasks,
} from '../../testkit/grpo-fixture.js';
import { replayRecordedSteps } from '../../testkit/grpo-replay.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { startPython, type PythonProcess } from '../../testkit/python-process.js';
import { eventually } from '../../testkit/temporal.js';
import { startWorkerProcess, type WorkerProcess } from '../../testkit/worker-process.js';

/**
 * Fault tests of GRPO training: the Python trainer worker SIGKILLed inside a trainer step, and the
 * CPU worker process SIGKILLed while rollouts and their model calls are in flight. Both runs must
 * end with exactly one optimizer step per iteration (none applied twice, none skipped) and every
 * rollout of every group counted once.
 */

const SYNTHESIS_RUN = 'synthesis-fixture';
const TASKS = 2; // both trained on: one iteration per epoch
const ROLLOUTS = 4; // per task (group size n)
const ITERATIONS = 3; // epochs
const MINI_BATCH = 1; // one task per optimizer update: two AdamW updates per trainer step
/** An answer delivered this long before a kill has certainly been stored by a live worker. */
const UNSTORED_WINDOW_MS = 1_500;
const JUDGE_ROLES = ['judge', JUDGE_CONTROL_ROLE];

/** The kept fixture tasks; `padding` characters of background lengthen each instruction (and transcript). */
function insertKeptTasks(url: string, padding: number): Promise<void> {
  const background = 'The ledger has drifted since the last audit; check every entry. ';
  const filler = background.repeat(Math.ceil(padding / background.length)).slice(0, padding);
  return insertFixtureTasks(url, {
    synthesisRunId: SYNTHESIS_RUN,
    count: TASKS,
    instructionSuffix: ` ${filler}`,
  });
}

/** One training run's surroundings: database, model server, trainer worker, policy server (behind a counting proxy). */
interface Stack {
  readonly db: TestDatabase;
  readonly models: ModelServer;
  readonly checkpoints: string;
  readonly env: Record<string, string> & { MOCKWORLD_TASK_QUEUE: string; MOCKWORLD_GPU_TASK_QUEUE: string };
  trainer: PythonProcess;
  readonly policy: PythonProcess;
  readonly proxy: CountingProxy;
  /** Stops everything it started, the current trainer process included, and drops the database. */
  close(): Promise<void>;
}

async function startStack(
  runId: string,
  options: { padding: number; modelLatencyMs: number; policyLatencyMs: number },
): Promise<Stack> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-grpo-faults-'));
  const undo: Array<() => Promise<unknown>> = [() => rm(dir, { recursive: true, force: true })];
  const cleanUp = async () => {
    for (const step of undo.reverse()) await step().catch(() => undefined);
  };
  try {
    const db = await createTestDatabase();
    undo.push(() => db.drop());
    await insertKeptTasks(db.url, options.padding);
    const models = await startModelServer({
      latencyMs: options.modelLatencyMs,
      script: grpoFixtureScript,
      logDeliveries: true,
    });
    undo.push(() => models.close());
    const checkpoints = path.join(dir, 'checkpoints');
    const env = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      MOCKWORLD_GPU_TASK_QUEUE: `gpu-${randomBytes(4).toString('hex')}`,
      MOCKWORLD_TASK_QUEUE: `cpu-${randomBytes(4).toString('hex')}`,
      MOCKWORLD_CHECKPOINT_DIR: checkpoints,
      MOCKWORLD_TRAINER_DEVICE: 'cpu',
      MOCKWORLD_HOME: dir,
      // One torch thread per Python process: on a shared 2-core machine, spinning threads only slow it.
      OMP_NUM_THREADS: '1',
      DATABASE_URL: db.url,
    };
    const policy = startPython(
      'mockworld_trainer.policy_server',
      [
        '--run-id',
        runId,
        '--port',
        '0',
        '--base',
        'tiny',
        '--default-max-tokens',
        '32',
        '--max-concurrency',
        '2',
      ],
      env,
      /policy server for run/,
    );
    undo.push(() => policy.kill());
    let trainer = startTrainer(env); // replaced when a test restarts the trainer
    undo.push(() => trainer.kill('SIGKILL'));
    await Promise.all([trainer.ready, policy.ready]);
    const proxy = await startCountingProxy(/(http:\/\/\S+\/v1)/.exec(await policy.ready)![1]!, {
      latencyMs: options.policyLatencyMs,
      keepHeaders: ['x-policy-version'],
    });
    undo.push(() => proxy.close());
    return {
      db,
      models,
      checkpoints,
      env,
      get trainer() {
        return trainer;
      },
      set trainer(next) {
        trainer = next;
      },
      policy,
      proxy,
      close: cleanUp,
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}

function startTrainer(env: Record<string, string>): PythonProcess {
  return startPython('mockworld_trainer.worker', [], env, /trainer worker:/);
}

/** The training spec: 2 tasks x 4 rollouts per iteration, 3 iterations, 2 AdamW updates per step. */
function grpoSpec(stack: Stack) {
  const role = { endpoint: { baseUrl: stack.models.url, model: 'scripted' } };
  return {
    dataset: { synthesisRunId: SYNTHESIS_RUN },
    policy: fixturePolicy({ baseUrl: stack.proxy.url, model: 'policy' }),
    judge: role,
    toolSimulator: role,
    userSimulator: role,
    globalBatch: TASKS,
    miniBatch: MINI_BATCH,
    rolloutsPerTask: ROLLOUTS,
    maxTurns: 2,
    learningRate: 1e-3,
    epochs: ITERATIONS,
    gpuTaskQueue: stack.env.MOCKWORLD_GPU_TASK_QUEUE,
  };
}

/** The step directories of a run that hold a committed record (`record.json`), and everything else there. */
async function checkpointDir(stack: Stack, runId: string) {
  const entries = await readdir(path.join(stack.checkpoints, runId)).catch(() => [] as string[]);
  const steps: number[] = [];
  for (const name of entries.filter((e) => /^step-\d{8}$/.test(e)).sort()) {
    const hasRecord = await readFile(path.join(stack.checkpoints, runId, name, 'record.json')).then(
      () => true,
      () => false,
    );
    if (hasRecord) steps.push(Number(name.slice(5)));
  }
  return { steps, entries };
}

interface StepRecord {
  step: number;
  kind: string;
  batch_ref: { kind: string; table: string; run_id: string; step: number };
  metrics: Record<string, number | null>;
  applied_at: string;
}

async function stepRecord(stack: Stack, runId: string, step: number): Promise<StepRecord> {
  const file = path.join(stack.checkpoints, runId, `step-${String(step).padStart(8, '0')}`, 'record.json');
  return JSON.parse(await readFile(file, 'utf8')) as StepRecord;
}

/** The `step` of the trainer.grpoStep activity `activityId` of a run, from its scheduled event. */
async function scheduledStep(handle: WorkflowHandle, activityId: string): Promise<number> {
  const history = await handle.fetchHistory();
  const scheduled = (history.events ?? [])
    .map((e) => e.activityTaskScheduledEventAttributes)
    .find((a) => a?.activityId === activityId && a.activityType?.name === 'trainer.grpoStep');
  return defaultPayloadConverter.fromPayload<{ step: number }>(scheduled!.input!.payloads![0]!).step;
}

/** Every completed activity of `type` in a workflow's history: its input, the attempt that completed, its result. */
async function completedActivities<I, R>(handle: WorkflowHandle, type: string) {
  const { EventType } = temporal.api.enums.v1;
  const events = (await handle.fetchHistory()).events ?? [];
  const id = (value: unknown) => Number(String(value));
  const byId = new Map(events.map((e) => [id(e.eventId), e]));
  const calls: Array<{
    input: I;
    attempt: number;
    lastFailure: temporal.api.failure.v1.IFailure | null | undefined;
    result: R | undefined;
  }> = [];
  for (const event of events) {
    if (event.eventType !== EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) continue;
    const completed = event.activityTaskCompletedEventAttributes!;
    const scheduled = byId.get(id(completed.scheduledEventId))!.activityTaskScheduledEventAttributes!;
    if (scheduled.activityType?.name !== type) continue;
    const started = byId.get(id(completed.startedEventId))!.activityTaskStartedEventAttributes!;
    const result = completed.result?.payloads?.[0];
    calls.push({
      input: defaultPayloadConverter.fromPayload<I>(scheduled.input!.payloads![0]!),
      attempt: started.attempt ?? 0,
      lastFailure: started.lastFailure,
      result: result ? defaultPayloadConverter.fromPayload<R>(result) : undefined,
    });
  }
  return calls;
}

/** Every `trainer.grpoStep` call of a run: its step, the attempt that completed, and its result. */
async function trainerStepCalls(handle: WorkflowHandle) {
  const calls = await completedActivities<{ step: number }, { step: number; replayed: boolean }>(
    handle,
    'trainer.grpoStep',
  );
  return calls.map((c) => ({ ...c, step: c.input.step }));
}

/**
 * The workflow's result; if it does not come within `timeoutMs`, fails naming what the run is
 * waiting for (pending activities with their attempts and last failures, pending children).
 */
async function resultWithin<T>(handle: WorkflowHandle, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void handle.describe().then(
        (d) => {
          const activities = (d.raw.pendingActivities ?? []).map(
            (a) =>
              `${a.activityType?.name} state ${a.state} attempt ${a.attempt}: ${a.lastFailure?.message ?? 'no failure'}`,
          );
          const children = (d.raw.pendingChildren ?? []).map((c) => c.workflowId);
          reject(
            new Error(
              `${handle.workflowId} not finished after ${timeoutMs} ms; pending activities: ` +
                `${activities.join('; ') || 'none'}; pending children: ${children.join(', ') || 'none'}`,
            ),
          );
        },
        (error: unknown) => reject(error as Error),
      );
    }, timeoutMs);
  });
  try {
    return await Promise.race([handle.result() as Promise<T>, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Replays steps 1..`last` of the run in a fresh trainer (replayRecordedSteps); a failed replay fails. */
async function replaySteps(stack: Stack, runId: string, last: number) {
  const found = (await replayRecordedSteps(stack.checkpoints, [[runId, last]], stack.env))[runId];
  if (!found || 'error' in found)
    throw new Error(`replaying ${runId} failed: ${found?.error ?? 'no result'}`);
  return found;
}

/**
 * The bookkeeping every run must end with, whatever was killed: one optimizer step per iteration,
 * each on exactly its iteration's rollouts, and each (iteration, task, sample) rollout once.
 */
async function expectExactlyOnce(stack: Stack, runId: string) {
  const { steps } = await checkpointDir(stack, runId);
  expect(steps).toEqual([1, 2, 3]);
  const records = await Promise.all(steps.map((s) => stepRecord(stack, runId, s)));
  expect(records.map((r) => ({ step: r.step, kind: r.kind, batch: r.batch_ref.step }))).toEqual(
    steps.map((s) => ({ step: s, kind: 'grpo', batch: s })),
  );
  for (const r of records) {
    expect(r.metrics).toMatchObject({
      num_samples: TASKS * ROLLOUTS,
      num_groups: TASKS,
      num_updates: TASKS / MINI_BATCH,
      skipped_updates: 0,
    });
  }

  // Each (iteration, task, sample) rollout exactly once, ended, judged once, sampled from step-<iteration>.
  const episodes = await query<{
    episode_id: string;
    task_id: string;
    sample_index: number;
    policy_version: string;
    end_reason: string | null;
    judged: number;
  }>(
    stack.db.url,
    `SELECT e.episode_id, e.task_id, e.sample_index, e.policy_version, e.end_reason,
            (SELECT count(*)::int FROM judgements j WHERE j.episode_id = e.episode_id) AS judged
       FROM episodes e WHERE e.purpose = 'rollout' ORDER BY e.episode_id`,
  );
  const expected: Array<{
    episode_id: string;
    task_id: string;
    sample_index: number;
    policy_version: string;
    ended: boolean;
    judged: number;
  }> = [];
  for (let it = 0; it < ITERATIONS; it++) {
    for (let t = 0; t < TASKS; t++) {
      for (let s = 0; s < ROLLOUTS; s++) {
        const taskId = fixtureTaskId(SYNTHESIS_RUN, t);
        expected.push({
          episode_id: `${runId}/it${it}/${taskId}/r${s}`,
          task_id: taskId,
          sample_index: s,
          policy_version: `step-${it}`,
          ended: true,
          judged: 1,
        });
      }
    }
  }
  expect(episodes.map(({ end_reason, ...e }) => ({ ...e, ended: end_reason !== null }))).toEqual(
    expected.sort((a, b) => (a.episode_id < b.episode_id ? -1 : 1)),
  );

  // Each step's batch is exactly its iteration's rollouts, once each.
  const batches = await query<{ step: number; episodes: string[] }>(
    stack.db.url,
    `SELECT step, array_agg(episode_id ORDER BY episode_id) AS episodes FROM trainer_batches
      WHERE run_id = $1 GROUP BY step ORDER BY step`,
    [runId],
  );
  expect(batches).toEqual(
    steps.map((s) => ({
      step: s,
      episodes: expected
        .filter((e) => e.episode_id.startsWith(`${runId}/it${s - 1}/`))
        .map((e) => e.episode_id),
    })),
  );

  // One metrics row per iteration, counting each group's rollouts once, with its own step's result.
  const metrics = await query<{ iteration: number; policy_version: string; metrics: Record<string, any> }>(
    stack.db.url,
    'SELECT iteration, policy_version, metrics FROM training_metrics WHERE run_id = $1 ORDER BY iteration',
    [runId],
  );
  expect(metrics.map((m) => [m.iteration, m.policy_version])).toEqual(steps.map((s) => [s - 1, `step-${s}`]));
  metrics.forEach((m, i) => {
    expect(m.metrics).toMatchObject({
      rolloutsJudged: TASKS * ROLLOUTS,
      episodes: TASKS * ROLLOUTS,
      judged: TASKS * ROLLOUTS,
      policyVersion: `step-${i + 1}`,
    });
    expect(m.metrics.trainer).toEqual(records[i]!.metrics);
  });
  return { records, episodes };
}

/**
 * The policy's answers as the policy server labelled them (`x-policy-version`), against the
 * ledger's rows per policy version: iteration i's rollouts were sampled from step i's weights.
 * Returns, per version, answers delivered minus ledger rows (answers paid twice).
 */
async function policyAnswersByVersion(stack: Stack, runId: string) {
  const served = stack.proxy.answers.filter((a) => a.role === 'policy');
  expect(served.every((a) => a.status === 200)).toBe(true);
  const versions = served.map((a) => Number(a.headers['x-policy-version']));
  expect(versions).toEqual([...versions].sort((a, b) => a - b)); // never an older policy after a newer one
  const ledger = await query<{ policy_version: string; n: number }>(
    stack.db.url,
    `SELECT policy_version, count(*)::int AS n FROM llm_calls WHERE role = 'policy' AND run_id = $1
      GROUP BY 1 ORDER BY 1`,
    [runId],
  );
  const turns = await query<{ policy_version: string; n: number }>(
    stack.db.url,
    `SELECT policy_version, sum(turns)::int AS n FROM episodes WHERE purpose = 'rollout' GROUP BY 1 ORDER BY 1`,
  );
  // Every agent turn of a rollout is one policy call in the ledger, tagged with the rollout's version.
  expect(ledger).toEqual(turns);
  return Array.from({ length: ITERATIONS }, (_, v) => {
    const answered = versions.filter((x) => x === v).length;
    const rows = ledger.find((l) => l.policy_version === `step-${v}`)?.n ?? 0;
    return { version: v, answered, rows };
  });
}

/** The Python trainer worker SIGKILLed inside a trainer step, then restarted. */
async function killTheTrainerInsideAStep(): Promise<void> {
  const runId = `grpo-trainer-kill-${Date.now()}`;
  // Longer instructions make each step take a while on the CPU: a window to freeze it in.
  const stack = await startStack(runId, { padding: 300, modelLatencyMs: 0, policyLatencyMs: 0 });
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  // The CPU worker in its own process, as in the other test: this process holds no database pools.
  let worker: WorkerProcess | undefined;
  try {
    worker = startWorkerProcess(stack.env);
    const client = new Client({ connection });
    const started = Date.now();
    const handle = await client.workflow.start('GrpoTraining', {
      args: [grpoSpec(stack)],
      taskQueue: stack.env.MOCKWORLD_TASK_QUEUE,
      workflowId: runId,
    });

    // From step 2 on (a retry must then resume from a checkpoint): wait until the trainer runs a
    // step (the activity is started and its code has heartbeated), freeze the process, and look
    // at the disk. Nothing of that step committed: the process is inside it, and is SIGKILLed
    // there. Already committed (the freeze came late): let it go on and take the next step.
    await eventually(
      async () =>
        (
          await query<{ n: number }>(
            stack.db.url,
            'SELECT count(*)::int AS n FROM trainer_batches WHERE run_id = $1 AND step = 2',
            [runId],
          )
        )[0]!.n > 0,
      240_000,
    );
    const { PendingActivityState } = temporal.api.enums.v1;
    const late: number[] = [];
    let killed: { step: number; entries: string[]; heartbeat: unknown; at: number } | undefined;
    while (!killed) {
      const pending = await eventually(
        async () =>
          (await handle.describe()).raw.pendingActivities?.find(
            (a) =>
              a.activityType?.name === 'trainer.grpoStep' &&
              a.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED &&
              a.attempt === 1 &&
              a.lastHeartbeatTime &&
              !late.includes(Number(a.activityId)),
          ),
        240_000,
        25,
      );
      stack.trainer.child.kill('SIGSTOP');
      const step = await scheduledStep(handle, pending.activityId!);
      const frozen = await checkpointDir(stack, runId);
      if (frozen.steps.includes(step)) {
        expect(step).toBeLessThan(ITERATIONS); // a later step is left to catch
        late.push(Number(pending.activityId));
        stack.trainer.child.kill('SIGCONT');
        continue;
      }
      expect(frozen.steps).toEqual(Array.from({ length: step - 1 }, (_, i) => i + 1));
      const at = Date.now();
      await stack.trainer.kill('SIGKILL');
      const details = pending.heartbeatDetails?.payloads?.[0];
      killed = {
        step,
        entries: frozen.entries.sort(),
        heartbeat: details ? defaultPayloadConverter.fromPayload(details) : undefined,
        at,
      };
    }
    const KILLED_STEP = killed.step;
    const killedAt = killed.at;
    console.log(
      `[trainer kill] SIGKILL inside step ${KILLED_STEP} (heartbeat ${JSON.stringify(killed.heartbeat)}; ` +
        `${late.length} step(s) committed before the freeze and let go); on disk then: ${killed.entries.join(', ')}`,
    );
    stack.trainer = startTrainer(stack.env);
    await stack.trainer.ready;

    // The killed attempt is retried once its heartbeat times out (the trainer's heartbeatTimeout).
    const summary = await resultWithin(handle, 360_000);
    expect(summary).toMatchObject({ iterations: ITERATIONS, policyStep: ITERATIONS, stopped: false });

    // The workflow: each step completed once, the killed one on its second attempt (the first timed
    // out on heartbeats), and each applied by the call that completed it (not replayed).
    const calls = await trainerStepCalls(handle);
    expect(calls.map((c) => ({ step: c.step, attempt: c.attempt, result: c.result }))).toEqual(
      [1, 2, 3].map((step) => ({
        step,
        attempt: step === KILLED_STEP ? 2 : 1,
        result: expect.objectContaining({ step, replayed: false }),
      })),
    );
    expect(calls[KILLED_STEP - 1]!.lastFailure?.timeoutFailureInfo?.timeoutType).toBe(
      temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT,
    );

    const { records } = await expectExactlyOnce(stack, runId);
    // The killed step was applied after the kill, by the restarted worker.
    expect(Date.parse(records[KILLED_STEP - 1]!.applied_at)).toBeGreaterThan(killedAt);

    // Weights and AdamW state are those of 3 steps applied once each, in order: a fresh trainer
    // applying the same batches gets bit-identical weights and the same metrics.
    const replay = await replaySteps(stack, runId, ITERATIONS);
    expect(replay).toEqual({
      sameMetrics: [true, true, true],
      sameWeights: true,
      adamSteps: [ITERATIONS * (TASKS / MINI_BATCH)],
      differences: [],
    });

    const served = await policyAnswersByVersion(stack, runId);
    expect(served.map((s) => s.answered)).toEqual(served.map((s) => s.rows)); // the CPU side never died
    console.log(
      `[trainer kill] steps on disk ${records.map((r) => r.step).join(',')}, AdamW updates ${replay.adamSteps}, ` +
        `policy answers by version ${served.map((s) => `v${s.version}: ${s.answered} answered / ${s.rows} ledger`).join('; ')}, ` +
        `${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  } finally {
    await worker?.kill();
    await connection.close();
    await stack.close();
  }
}

/** The CPU worker process SIGKILLed while rollouts and their model calls are in flight, then restarted. */
async function killTheCpuWorkerDuringRollouts(): Promise<void> {
  const runId = `grpo-cpu-kill-${Date.now()}`;
  /** Iteration during whose rollouts the worker is killed (the policy server serves step 1). */
  const KILL_IN_ITERATION = 1;
  // Latency at both endpoints keeps model calls in flight long enough to be cut.
  const stack = await startStack(runId, { padding: 0, modelLatencyMs: 300, policyLatencyMs: 300 });
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  let worker: WorkerProcess | undefined;
  try {
    const started = Date.now();
    const client = new Client({ connection });
    worker = startWorkerProcess(stack.env);
    const handle = await client.workflow.start('GrpoTraining', {
      args: [grpoSpec(stack)],
      taskQueue: stack.env.MOCKWORLD_TASK_QUEUE,
      workflowId: runId,
    });

    // Kill mid-iteration: some of its rollouts have ended, others are still running with their
    // policy calls on the wire. The policy server generates two answers at a
    // time, so the iteration's rollouts end in waves.
    const iterationEpisodes = async () =>
      (
        await query<{ ended: number; running: number }>(
          stack.db.url,
          `SELECT count(end_reason)::int AS ended, count(*) FILTER (WHERE end_reason IS NULL)::int AS running
             FROM episodes WHERE starts_with(episode_id, $1)`,
          [`${runId}/it${KILL_IN_ITERATION}/`],
        )
      )[0]!;
    const atKill = await eventually(
      async () => {
        if (stack.proxy.stats.inFlight === 0) return undefined;
        const episodes = await iterationEpisodes();
        return episodes.ended > 0 && episodes.running > 0 && stack.proxy.stats.inFlight > 0
          ? episodes
          : undefined;
      },
      240_000,
      20,
    );
    // Calls on the wire at the kill: the only ones whose answers the dead process can lose, with
    // the answers delivered just before it (handed to the socket, not yet stored by the process).
    const onWire = { policy: stack.proxy.stats.inFlight, judge: stack.models.stats.inFlight };
    const killedAt = Date.now();
    await worker.kill();
    const justDelivered = (deliveries: readonly { at: number; role: string | undefined }[], role: string) =>
      deliveries.filter((d) => d.role === role && d.at >= killedAt - UNSTORED_WINDOW_MS && d.at <= killedAt)
        .length;
    const exposed = {
      policy: onWire.policy + justDelivered(stack.proxy.answers, 'policy'),
      judge:
        onWire.judge + JUDGE_ROLES.reduce((n, role) => n + justDelivered(stack.models.deliveries, role), 0),
    };
    console.log(
      `[cpu kill] SIGKILL in iteration ${KILL_IN_ITERATION}: ${atKill.ended} rollouts ended, ${atKill.running} running; ` +
        `calls on the wire: ${onWire.policy} policy, ${onWire.judge} judge; ` +
        `in flight or just delivered: ${exposed.policy} policy, ${exposed.judge} judge`,
    );
    worker = startWorkerProcess(stack.env);

    const summary = await resultWithin(handle, 240_000);
    expect(summary).toMatchObject({ iterations: ITERATIONS, policyStep: ITERATIONS, stopped: false });
    const calls = await trainerStepCalls(handle);
    expect(calls.map((c) => ({ step: c.step, replayed: c.result?.replayed }))).toEqual(
      [1, 2, 3].map((step) => ({ step, replayed: false })),
    );
    const { records } = await expectExactlyOnce(stack, runId);

    // The kill cut rollouts: some groups were retried (and their rollouts resumed) after it.
    const retried = (
      await Promise.all(
        Array.from({ length: TASKS }, (_, t) =>
          completedActivities<{ rollouts: number }, unknown>(
            client.workflow.getHandle(`${runId}-it${KILL_IN_ITERATION}-${fixtureTaskId(SYNTHESIS_RUN, t)}`),
            'runJudgedRolloutGroup',
          ),
        ),
      )
    )
      .flat()
      .filter((c) => c.attempt > 1).length;
    expect(retried).toBeGreaterThan(0);

    // Every answer delivered is one ledger row, except answers of calls that were on the wire at
    // the SIGKILL: the dead process never stored them, so their retries asked again. Every call
    // that completed before the kill was served from the cache afterwards.
    const served = await policyAnswersByVersion(stack, runId);
    const policy = {
      answered: served.reduce((n, s) => n + s.answered, 0),
      rows: served.reduce((n, s) => n + s.rows, 0),
    };
    // Rollout grades and the judge's controls (rubric-controls.ts) are both judge calls.
    const judgeRows = await query<{ role: string; n: number }>(
      stack.db.url,
      `SELECT role, count(*)::int AS n FROM llm_calls WHERE role = ANY($1) GROUP BY role`,
      [JUDGE_ROLES],
    );
    const rowsOf = (role: string) => judgeRows.find((r) => r.role === role)?.n ?? 0;
    const judge = {
      answered: JUDGE_ROLES.reduce((n, role) => n + (stack.models.stats.answeredByRole[role] ?? 0), 0),
      rows: rowsOf('judge') + rowsOf(JUDGE_CONTROL_ROLE),
    };
    const paidTwice = { policy: policy.answered - policy.rows, judge: judge.answered - judge.rows };
    console.log(
      `[cpu kill] steps on disk ${records.map((r) => r.step).join(',')}; ${retried} rollouts retried; ` +
        `policy: ${policy.answered} answered, ${policy.rows} ledger rows, ${stack.proxy.stats.abandoned} cut by the kill, ` +
        `${paidTwice.policy} answered twice; judge: ${judge.answered} answered, ${judge.rows} ledger rows, ` +
        `${stack.models.stats.abandoned} cut, ${paidTwice.judge} answered twice; ` +
        `${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    expect(served.every((s) => s.answered >= s.rows)).toBe(true);
    expect(rowsOf('judge')).toBe(ITERATIONS * TASKS * ROLLOUTS); // one judge call per rollout, none repaired
    expect(rowsOf(JUDGE_CONTROL_ROLE)).toBe(TASKS * 2); // an empty and a forbidden control per task, once per run
    expect(paidTwice.policy).toBeGreaterThanOrEqual(0);
    expect(paidTwice.policy).toBeLessThanOrEqual(exposed.policy);
    expect(paidTwice.judge).toBeGreaterThanOrEqual(0);
    expect(paidTwice.judge).toBeLessThanOrEqual(exposed.judge);
    // The kill lost calls in flight: cut before their answer, or answered to the dead process.
    expect(stack.proxy.stats.abandoned + paidTwice.policy).toBeGreaterThan(0);
  } finally {
    await worker?.kill();
    await connection.close();
    await stack.close();
  }
}

// Concurrently: the trainer-kill run spends most of its time waiting for the trainer activity's heartbeat
// timeout (2 minutes, workflows/trainer.ts), and the CPU-kill run goes on meanwhile.
describe.concurrent('GRPO training with a worker SIGKILLed mid-run', () => {
  it(
    'trainer worker killed inside a step: each step applied exactly once, the killed one by its retry from the checkpoint',
    { timeout: 540_000 },
    killTheTrainerInsideAStep,
  );
  it(
    'CPU worker killed during rollouts: each step applied once, each rollout counted once, no finished call paid twice',
    { timeout: 420_000 },
    killTheCpuWorkerDuringRollouts,
  );
});
