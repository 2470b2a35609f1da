/**
 * Fault (i): the Python evaluation worker (workers/evaluation, `mockworld_eval.worker`) SIGKILLed
 * with its trial processes while an Evaluation run is in progress, and started again as a
 * supervisor would. With this kind the workload has Evaluation runs too: a few BFCL multi-turn and
 * tau2 airline trials, run through the benchmarks' official code in the eval venv against a model
 * server that replays ground truth (testkit/eval-replay.ts, the policy and user simulator of the
 * evaluation tests), so every trial finishes fast and must score full reward.
 *
 * A trial cut by the kill heartbeats no more; Temporal retries it after the trial's heartbeat
 * timeout (a minute, workflows/evaluation-activities.ts) on the restarted worker, which runs it
 * again from its start (the official code keeps no state between calls); a trial whose row is
 * stored is never run again (eval_trials, insert-if-absent). The audit reads eval_trials back:
 * every expected (benchmark, group, task, trial) exactly once, none lost, none run again after its
 * row was stored (no model call of it arrived later), each at full reward.
 *
 * Back = the restarted worker polls the evaluation queue; recovered = also every trial activity
 * it was running started again on a live worker (or finished).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '../../deploy/paths.js';
import { query } from '../database.js';
import { evalReplayScript, type ReplayPlans } from '../eval-replay.js';
import { replayPlans } from '../eval-worker.js';
import { startModelServer, type ModelServer, type Reply, type ScriptedRequest } from '../model-server.js';
import type { Finding, RunAudit, RunRecord } from './audit.js';
import { sleep, workerIdentity, type Started, type Supervised } from './components.js';
import { activitiesResumed, type PendingActivity, type TemporalObserver } from './observe.js';
import type { FaultContext, FaultRecord, Injector } from './types.js';

/** The Evaluation runs' trials: BFCL multi_turn_base tasks and tau2 airline tasks, one trial each. */
export interface EvaluationWorkload {
  readonly bfclTasks: readonly string[];
  readonly tau2Tasks: readonly string[];
  /** Every trial of a run, as `benchmark/group/task/trial` (the replay header, and eval_trials' key). */
  readonly expected: readonly string[];
}

export const BFCL_CATEGORY = 'multi_turn_base';
export const TAU2_DOMAIN = 'airline';

export function evaluationWorkload(bfcl: number, tau2: number): EvaluationWorkload {
  const bfclTasks = Array.from({ length: bfcl }, (_, i) => `${BFCL_CATEGORY}_${i}`);
  const tau2Tasks = Array.from({ length: tau2 }, (_, i) => String(i));
  return {
    bfclTasks,
    tau2Tasks,
    expected: [
      ...bfclTasks.map((t) => `bfcl/${BFCL_CATEGORY}/${t}/0`),
      ...tau2Tasks.map((t) => `tau2/${TAU2_DOMAIN}/${t}/0`),
    ].sort(),
  };
}

/** One model call of a trial, as the replay server saw it. */
export interface EvalCall {
  /** The trial (`benchmark/group/task/trial`). */
  readonly key: string;
  readonly arrivedAt: number;
  answeredAt?: number;
}

/** The replay model server of the Evaluation runs, with every call it received. */
export interface EvalModels {
  readonly server: ModelServer;
  readonly calls: readonly EvalCall[];
}

/**
 * The replay server: each call waits `latencyMs` (so a kill can land inside a trial), then gets
 * the ground truth's next move. No random faults: a broken answer would change what the official
 * code scores, and the trials' outcome is part of the audit.
 */
export async function startEvaluationModels(
  workload: EvaluationWorkload,
  latencyMs: number,
): Promise<EvalModels> {
  const plans: Record<string, ReplayPlans[string]> = {
    ...(workload.bfclTasks.length ? await replayPlans('bfcl', BFCL_CATEGORY, workload.bfclTasks) : {}),
    ...(workload.tau2Tasks.length ? await replayPlans('tau2', TAU2_DOMAIN, workload.tau2Tasks) : {}),
  };
  const replay = evalReplayScript(plans) as (request: ScriptedRequest) => Reply;
  const calls: EvalCall[] = [];
  const server = await startModelServer({
    log: false,
    script: async (request: ScriptedRequest) => {
      const header = request.headers['x-mockworld-eval-task'];
      const call: EvalCall = {
        key: String(Array.isArray(header) ? header[0] : header),
        arrivedAt: Date.now(),
      };
      calls.push(call);
      await sleep(latencyMs);
      call.answeredAt = Date.now();
      return replay(request);
    },
  });
  return { server, calls };
}

/**
 * `python -m mockworld_eval.worker` from .venv-eval, in a process group of its own (a kill takes
 * its forkserver and trial processes too); `ready` resolves once it polls.
 */
export function launchEvalWorker(env: Record<string, string>): Started & { readonly ready: Promise<void> } {
  const python = path.join(REPO_ROOT, '.venv-eval', 'bin', 'python');
  const child = spawn(python, ['-m', 'mockworld_eval.worker'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-8_000);
      if (output.includes('evaluation worker polling')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`evaluation worker exited with ${code}:\n${output.slice(-3_000)}`)),
    );
    child.once('error', (error) =>
      reject(new Error(`cannot start ${python} (${error.message}): run bash deploy/eval-venv.sh`)),
    );
  });
  return { child, ready };
}

/** A kill of the evaluation worker, for the audit: when, and the trials it cut. */
export interface EvalKill {
  readonly at: number;
  readonly pid: number;
}

export interface EvalKillDeps {
  readonly observer: TemporalObserver;
  readonly worker: Supervised;
  readonly queue: string;
  /** Worker pids seen polling (the harness's set). */
  readonly ready: Set<number>;
  readonly kills: EvalKill[];
  readonly recoveryTimeoutMs: number;
  readonly temporalUp: () => boolean;
  /** Whether an Evaluation run is in progress now. */
  readonly evaluationRunning: () => boolean;
}

/** How long a fault waits for a trial to be running on the worker before it kills it anyway. */
const TRIAL_WAIT_MS = 3 * 60_000;

/** The injector of fault (i); see the module comment. */
export function evaluationKillInjector(ctx: FaultContext, deps: EvalKillDeps): Injector {
  const { observer, worker, queue, ready } = deps;
  let waitingSince: { seq: number; at: number } | undefined;
  // Trials (workflow, activity) a kill has cut: a kill waits for a trial none has met, so that one
  // trial's retries are not cut over and over (the first full run took one to attempt 7).
  const met = new Set<string>();
  const keyOf = (a: PendingActivity) => `${a.workflowId}\n${a.activityId}`;
  const trials = async (identity: string) => {
    const views = deps.temporalUp() ? await observer.snapshot(3_000) : undefined;
    return views?.flatMap((v) => v.pending.filter((a) => a.started && a.identity === identity));
  };
  return async (seq) => {
    if (waitingSince?.seq !== seq) waitingSince = { seq, at: Date.now() };
    const pid = worker.pid;
    if (pid === undefined || !ready.has(pid)) return 'later';
    const identity = workerIdentity(pid);
    // A trial running on the worker (bounded wait; asked again later while a run may still start one).
    const hasTrial = (r: PendingActivity[] | undefined) =>
      r?.some((a) => a.type === 'eval.runTrial' && !met.has(keyOf(a))) === true;
    const waitUntil = Date.now() + 30_000;
    let running = await trials(identity);
    while (!hasTrial(running) && Date.now() < waitUntil && !ctx.stopping()) {
      await sleep(250);
      running = await trials(identity);
    }
    if (!hasTrial(running) && Date.now() - waitingSince.at < TRIAL_WAIT_MS) return 'later';
    if (worker.pid !== pid) return 'later';
    for (const a of running ?? []) if (a.type === 'eval.runTrial') met.add(keyOf(a));
    const at = Date.now();
    deps.kills.push({ at, pid });
    const { next } = await worker.killAndRestart();
    const record: FaultRecord = {
      kind: 'evaluation-worker-kill',
      seq,
      atS: ctx.seconds(at),
      detail:
        `evaluation worker pid ${pid} with its trial processes (${running?.filter((a) => a.type === 'eval.runTrial').length ?? '?'} trials` +
        `${
          running?.some((a) => a.type !== 'eval.runTrial')
            ? ` and ${running
                .filter((a) => a.type !== 'eval.runTrial')
                .map((a) => a.type)
                .join(', ')}`
            : ''
        } running on it` +
        `${deps.evaluationRunning() ? '' : '; no Evaluation run in progress'})`,
      runsInProgress: ctx.runsInProgress(),
      notes: [],
    };
    ctx.record(record);
    ctx.log(`fault (i) #${seq}: SIGKILL ${record.detail}`);
    const before = running;
    record.interrupted = before?.length;
    // Back: the new worker polls. Its start (importing the benchmarks' code) takes a while.
    let backAt: number | undefined;
    const deadline = at + deps.recoveryTimeoutMs;
    const nextPid = next.child.pid;
    while (nextPid !== undefined && Date.now() < deadline && !ctx.stopping()) {
      if (await observer.polling(queue, workerIdentity(nextPid), 'activity')) {
        ready.add(nextPid);
        backAt = Date.now();
        break;
      }
      await sleep(250);
    }
    if (backAt === undefined) {
      record.notes.push('the restarted evaluation worker did not poll in time');
      return 'done';
    }
    record.backMs = backAt - at;
    ctx.monitor(
      (async () => {
        const resumedAt = before ? await activitiesResumed(observer, before, ctx.watchUntil(at)) : backAt;
        if (!before) record.notes.push('Temporal did not answer at the kill: the trials it cut are unknown');
        if (resumedAt !== undefined) record.recoveryMs = Math.max(resumedAt, backAt) - at;
        else record.notes.push('a trial cut by the kill did not start again in time');
      })(),
    );
    return 'done';
  };
}

/** What the Evaluation runs cost the replay server beyond their trials: calls of trials a kill cut. */
export interface EvaluationCalls {
  readonly calls: number;
  /** Trials a kill cut after they had asked the model (a call before the kill, the row stored after it). */
  readonly trialsCut: number;
  /** Their calls before the kill: asked again by the trial's new attempt (no ledger in the eval worker). */
  readonly callsAskedAgain: number;
}

/**
 * The audit of one Evaluation run: eval_trials against the trials the spec asks for, each exactly
 * once, none run again after its row was stored (a model call of it arriving later, while the run
 * was in progress), each at full reward (the replay is the ground truth).
 */
export async function auditEvaluation(
  databaseUrl: string,
  record: RunRecord,
  workload: EvaluationWorkload,
  calls: readonly EvalCall[],
): Promise<RunAudit> {
  const rows = await query<{ key: string; n: number; reward: number; stored: Date; failure: string | null }>(
    databaseUrl,
    `SELECT benchmark || '/' || task_group || '/' || task_id || '/' || trial AS key, count(*)::int AS n,
            min(reward) AS reward, min(created_at) AS stored, min(failure) AS failure
       FROM eval_trials WHERE evaluation_id = $1 GROUP BY 1 ORDER BY 1`,
    [record.workflowId],
  );
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const lost: Finding[] = [];
  const duplicated: Finding[] = [];
  const failedRecorded: Finding[] = [];
  const notes: string[] = [];
  const inRun = calls.filter(
    (c) => c.arrivedAt >= record.startedAt && c.arrivedAt <= (record.closedAt ?? Number.POSITIVE_INFINITY),
  );
  for (const key of workload.expected) {
    const row = byKey.get(key);
    if (!row) {
      lost.push({ item: key, problem: 'no eval_trials row' });
      continue;
    }
    if (row.n !== 1) duplicated.push({ item: key, problem: `${row.n} eval_trials rows` });
    const later = inRun.filter((c) => c.key === key && c.arrivedAt > row.stored.getTime());
    if (later.length)
      duplicated.push({
        item: key,
        problem: `run again after its row was stored: ${later.length} model calls arrived after it`,
      });
    if (row.reward !== 1)
      failedRecorded.push({
        item: key,
        problem: `reward ${row.reward}${row.failure ? ` (${row.failure.slice(0, 120)})` : ''} in a ground-truth replay`,
      });
  }
  for (const row of rows)
    if (!workload.expected.includes(row.key))
      duplicated.push({ item: row.key, problem: 'a row for a trial the spec does not ask for' });
  const trials = (record.result as { metrics?: { trials?: number } } | undefined)?.metrics?.trials;
  if (record.status === 'COMPLETED' && trials !== workload.expected.length)
    notes.push(`the summary counts ${trials} trials, the spec asks for ${workload.expected.length}`);
  return {
    workflowId: record.workflowId,
    kind: record.kind,
    status: record.status ?? 'unknown',
    items: workload.expected.length,
    lost,
    duplicated,
    failedRecorded,
    notes,
  };
}

/** Calls of the Evaluation runs, and those a kill made the replay server answer twice. */
export async function evaluationCalls(
  databaseUrl: string,
  runs: readonly RunRecord[],
  calls: readonly EvalCall[],
  kills: readonly EvalKill[],
): Promise<EvaluationCalls> {
  let trialsCut = 0;
  let callsAskedAgain = 0;
  for (const run of runs) {
    const rows = await query<{ key: string; stored: Date }>(
      databaseUrl,
      `SELECT benchmark || '/' || task_group || '/' || task_id || '/' || trial AS key, min(created_at) AS stored
         FROM eval_trials WHERE evaluation_id = $1 GROUP BY 1`,
      [run.workflowId],
    );
    const end = run.closedAt ?? Number.POSITIVE_INFINITY;
    for (const kill of kills) {
      if (kill.at < run.startedAt || kill.at > end) continue;
      for (const row of rows) {
        if (row.stored.getTime() <= kill.at) continue; // stored before the kill: not cut
        const before = calls.filter(
          (c) => c.key === row.key && c.arrivedAt >= run.startedAt && c.arrivedAt < kill.at,
        );
        // Cut by this kill: begun before it, and not already counted for an earlier kill.
        const earlier =
          kills.filter((k) => k.at < kill.at && k.at >= run.startedAt).at(-1)?.at ?? run.startedAt;
        const sinceEarlier = before.filter((c) => c.arrivedAt >= earlier);
        if (sinceEarlier.length === 0) continue;
        trialsCut++;
        callsAskedAgain += sinceEarlier.length;
      }
    }
  }
  return { calls: calls.length, trialsCut, callsAskedAgain };
}
