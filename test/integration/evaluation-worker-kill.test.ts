import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { EvaluationSummary } from '../../workflows/evaluation.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { evalReplayScript, type ReplayPlans } from '../../testkit/eval-replay.js';
import { replayPlans, startEvalWorker, type EvalWorkerProcess } from '../../testkit/eval-worker.js';
import {
  startModelServer,
  type ModelServer,
  type Reply,
  type ScriptedRequest,
} from '../../testkit/model-server.js';
import { eventually, startTestWorker, type TestWorker } from '../../testkit/temporal.js';

const BFCL_CATEGORY = 'multi_turn_base';
const BFCL_TASKS = ['multi_turn_base_0', 'multi_turn_base_1', 'multi_turn_base_2', 'multi_turn_base_3'];
const TAU2_TASKS = ['0', '1'];
const TAU2_TRIALS = 2;
/** Every (benchmark, group, task, trial) of the run, as the replay header names it. */
const EXPECTED = [
  ...BFCL_TASKS.map((t) => `bfcl/${BFCL_CATEGORY}/${t}/0`),
  ...TAU2_TASKS.flatMap((t) => Array.from({ length: TAU2_TRIALS }, (_, i) => `tau2/airline/${t}/${i}`)),
].sort();
/** Trial rows stored before the kill: the kill lands mid-run, after some trials and before others. */
const STORED_BEFORE_KILL = 2;
/**
 * Model latency, and how recently a call must have arrived for the kill to certainly cut it: the
 * answer is due LATENCY_MS after arrival, so a call FRESH_CALL_MS old is still unanswered (and its
 * trial unstored) when the kill lands, however busy the machine.
 */
const LATENCY_MS = 500;
const FRESH_CALL_MS = 50;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The Python evaluation worker SIGKILLed mid-run, with its forkserver and trial processes (its
 * process group: a node failure), while a trial's model call is in flight; a new worker is started.
 * The run completes with every (task, trial) stored exactly once, the cut trial run again from the
 * start, and no trial whose row was stored before the kill run again. The model boundary is the
 * scripted model server replaying ground truth, so every trial also scores full reward.
 */
describe('an Evaluation run whose evaluation worker is SIGKILLed', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let evalWorker: EvalWorkerProcess | undefined;
  const evalQueue = `eval-kill-${randomBytes(4).toString('hex')}`;
  let env: Record<string, string>;
  /**
   * Every model call answered, by trial (the replay header), with when it arrived and when it was
   * answered (a call cut by the kill is "answered" into a closed connection, after the kill).
   */
  const answered: { key: string; arrivedAt: number; at: number }[] = [];
  /** Calls not answered yet, by trial, with when they arrived. */
  const waiting = new Map<symbol, { key: string; at: number }>();

  beforeAll(async () => {
    db = await createTestDatabase();
    const plans: Record<string, ReplayPlans[string]> = {
      ...(await replayPlans('bfcl', BFCL_CATEGORY, BFCL_TASKS)),
      ...(await replayPlans('tau2', 'airline', TAU2_TASKS, TAU2_TRIALS)),
    };
    // The replay script is a function (evalReplayScript builds one); wrapped to know which trial
    // each call belongs to, and to play the latency here, where that is known.
    const replay = evalReplayScript(plans) as (request: ScriptedRequest) => Reply;
    models = await startModelServer({
      script: async (request: ScriptedRequest) => {
        const header = request.headers['x-mockworld-eval-task'];
        const key = String(Array.isArray(header) ? header[0] : header);
        const call = Symbol(key);
        const arrivedAt = Date.now();
        waiting.set(call, { key, at: arrivedAt });
        await sleep(LATENCY_MS);
        waiting.delete(call);
        answered.push({ key, arrivedAt, at: Date.now() });
        return replay(request);
      },
    });
    tw = await startTestWorker(inject('temporalAddress'), db.url);
    env = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      MOCKWORLD_EVAL_TASK_QUEUE: evalQueue,
      MOCKWORLD_EVAL_CONCURRENCY: '2',
      DATABASE_URL: db.url,
    };
  }, 240_000);
  afterAll(async () => {
    await evalWorker?.kill();
    await tw?.close();
    await models?.close();
    await db?.drop();
  });

  const storedKeys = async (evaluationId: string) =>
    (
      await query<{ key: string }>(
        db.url,
        `SELECT benchmark || '/' || task_group || '/' || task_id || '/' || trial AS key
           FROM eval_trials WHERE evaluation_id = $1`,
        [evaluationId],
      )
    ).map((r) => r.key);

  it('completes with every (task, trial) stored exactly once', async () => {
    evalWorker = await startEvalWorker(env, { processGroup: true });
    const workflowId = `evaluation-kill-${Date.now()}`;
    const handle = await tw.client.workflow.start('Evaluation', {
      args: [
        {
          kind: 'Evaluation',
          name: 'worker-kill',
          policy: { endpoint: { baseUrl: models.url, model: 'replay-policy' } },
          benchmarks: {
            bfcl: { categories: [BFCL_CATEGORY], taskIds: BFCL_TASKS },
            tau2: {
              domains: ['airline'],
              taskIds: TAU2_TASKS,
              trials: TAU2_TRIALS,
              userSimulator: { endpoint: { baseUrl: models.url, model: 'replay-user' } },
            },
          },
          concurrency: 2,
          evalTaskQueue: evalQueue,
          bootstrapSamples: 200,
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId,
    });

    // Mid-run: some trials stored, then a call of a trial that has had calls answered (so it is
    // mid-trial) has just arrived (so it is unanswered and its row unwritten) when the worker's
    // process group is killed.
    await eventually(async () => (await storedKeys(workflowId)).length >= STORED_BEFORE_KILL, 300_000);
    const cutCall = await eventually(
      async () =>
        [...waiting.values()].find(
          (call) => call.at >= Date.now() - FRESH_CALL_MS && answered.some((a) => a.key === call.key),
        ),
      180_000,
      2,
    );
    const killedAt = Date.now();
    await evalWorker.kill('SIGKILL');
    evalWorker = undefined;
    const storedAtKill = await storedKeys(workflowId);
    expect(storedAtKill.length).toBeLessThan(EXPECTED.length); // the run was not over
    expect(storedAtKill).not.toContain(cutCall.key);
    const begunAtKill = new Set(answered.filter((a) => a.at <= killedAt).map((a) => a.key));

    evalWorker = await startEvalWorker(env, { processGroup: true });
    const summary = (await handle.result()) as EvaluationSummary;

    // Every (task, trial) exactly once: the rows' keys are the expected ones, none twice, none missing.
    const rows = await query<{ key: string; n: number; reward: number }>(
      db.url,
      `SELECT benchmark || '/' || task_group || '/' || task_id || '/' || trial AS key,
              count(*)::int AS n, min(reward) AS reward
         FROM eval_trials WHERE evaluation_id = $1 GROUP BY 1 ORDER BY 1`,
      [workflowId],
    );
    expect(rows.map((r) => r.key)).toEqual(EXPECTED);
    expect(rows.filter((r) => r.n !== 1)).toEqual([]);
    expect(rows.filter((r) => r.reward !== 1)).toEqual([]);
    expect(summary.metrics.trials).toBe(EXPECTED.length);
    for (const group of summary.metrics.groups) expect(group.avgAtK, group.group).toBe(1);

    // A trial stored before the kill was never run again (no call of it arrived after the kill).
    const afterKill = new Set(answered.filter((a) => a.arrivedAt > killedAt).map((a) => a.key));
    expect(storedAtKill.filter((key) => afterKill.has(key))).toEqual([]);
    // Trials begun and cut by the kill (the one caught mid-call among them) ran again on the new worker.
    const cut = [...begunAtKill].filter((key) => !storedAtKill.includes(key));
    expect(cut).toContain(cutCall.key);
    expect(cut.filter((key) => !afterKill.has(key))).toEqual([]);
    console.log(
      `[eval kill test] ${storedAtKill.length} of ${EXPECTED.length} trials stored at the kill; ` +
        `cut mid-trial and run again: ${cut.join(', ')}`,
    );
  }, 600_000); // two worker starts and a heartbeat-timeout (1 minute) recovery on a busy machine
});
