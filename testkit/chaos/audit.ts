/**
 * The audit after a chaos run: what PostgreSQL, the Temporal histories, the trainer's checkpoints
 * and the model servers' own counts say about each run. Every number here is read back from the
 * real stores; nothing is inferred from what the harness meant to do.
 *
 * Why this file is long (over 400 lines): each check (tasks lost or duplicated, steps applied twice, answers
 * paid twice, mapping consistency, unexplained retries) is a short query plus its explanation, and
 * they share one snapshot of the run; split per check, each file would re-read the same stores.
 * The fault injectors already live in their own modules (gateway-kill, slow-model, checkpoint-disk).
 */
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { normalizeBaseUrl } from '../../activities/llm/cache-key.js';
import { datasetDirectoryName } from '../../activities/synthesis/export.js';
import { trainingEpisodeId } from '../../activities/training/episode-ids.js';
import { argsKey } from '../../activities/world/canonical-args.js';
import { ASK_USER_TOOL, ASK_USER_TOOL_NAME } from '../../activities/world/ask-user.js';
import { notRunObservation } from '../../activities/world/observations.js';
import { validateToolCall } from '../../activities/world/tool-validation.js';
import { canonicalJson } from '../../activities/llm/cache-key.js';
import type { FunctionTool } from '../../schemas/function-tool.js';
import { taskIdOf } from '../../workflows/synthesis-task.js';
import { query } from '../database.js';
import { fixtureTaskId } from '../grpo-fixture.js';
import { replayRecordedSteps, type Replay, type ReplayDifference } from '../grpo-replay.js';
import type { TemporalObserver } from './observe.js';
import { FIXTURE_SYNTHESIS_RUN } from './workload.js';

/** A run the workload started, and how it ended. */
export interface RunRecord {
  readonly kind: 'Synthesis' | 'GrpoTraining' | 'Evaluation';
  readonly workflowId: string;
  readonly round: number;
  readonly startedAt: number;
  closedAt?: number;
  /** COMPLETED, FAILED, ... or 'TIMED_OUT' when it had not closed by the harness's deadline. */
  status?: string;
  result?: unknown;
  error?: string;
}

/** One work item (a synthesis task, a GRPO rollout) the audit could not account for, and why. */
export interface Finding {
  readonly item: string;
  readonly problem: string;
}

export interface RunAudit {
  readonly workflowId: string;
  readonly kind: RunRecord['kind'];
  readonly status: string;
  /** Synthesis tasks, GRPO rollouts (iteration x task x sample), or evaluation trials. */
  readonly items: number;
  readonly lost: Finding[];
  readonly duplicated: Finding[];
  /** Synthesis tasks whose failure the run recorded (a non-retryable model rejection): not lost. */
  readonly failedRecorded: Finding[];
  /** GRPO: optimizer steps. */
  readonly steps?: StepAudit;
  readonly notes: string[];
}

export interface StepAudit {
  readonly expected: number[];
  /** Steps with a committed record.json. */
  readonly recorded: number[];
  readonly skipped: number[];
  /** Steps applied more than once, from the AdamW update counter against the records' update counts. */
  readonly appliedTwice: number;
  readonly adamUpdates: number | null;
  readonly expectedAdamUpdates: number;
  /**
   * A fresh trainer applying the recorded batches in order gets the same metrics and bit-identical
   * weights; else `differences` says where (step, metrics or weights, field, both values), or
   * `error` why the replay could not run.
   */
  readonly replay:
    { sameMetrics: boolean[]; sameWeights: boolean; differences: ReplayDifference[] } | { error: string };
  /** trainer.grpoStep completions in the history that found their step already applied. */
  readonly replayedCalls: number;
}

// ---------------------------------------------------------------------------------------------
// Synthesis

export async function auditSynthesis(
  db: string,
  observer: TemporalObserver,
  run: RunRecord,
  tasks: number,
  demonstrations: number,
  home: string,
): Promise<RunAudit> {
  const lost: Finding[] = [];
  const duplicated: Finding[] = [];
  const failedRecorded: Finding[] = [];
  const notes: string[] = [];
  const rows = await query<{ idx: number; task_id: string; stage: string }>(
    db,
    'SELECT idx, task_id, stage FROM tasks WHERE run_id = $1 ORDER BY idx',
    [run.workflowId],
  );
  const byIdx = new Map(rows.map((r) => [r.idx, r]));
  const demos = await query<{ task_id: string; n: number }>(
    db,
    `SELECT task_id, count(*)::int AS n FROM episodes
      WHERE purpose = 'demonstration' AND starts_with(task_id, $1) GROUP BY 1`,
    [`${run.workflowId}-task-`],
  );
  for (const d of demos) {
    if (d.n > demonstrations)
      duplicated.push({ item: d.task_id, problem: `${d.n} demonstrations, spec says ${demonstrations}` });
  }
  let dbKept = 0;
  let dbRejected = 0;
  for (let idx = 0; idx < tasks; idx++) {
    const id = taskIdOf(run.workflowId, idx);
    const row = byIdx.get(idx);
    if (row?.stage === 'kept') dbKept++;
    if (row?.stage === 'rejected') dbRejected++;
    if (row?.stage === 'kept' || row?.stage === 'rejected') continue;
    const childStatus = await observer.status(id);
    if (childStatus === 'FAILED') {
      failedRecorded.push({ item: id, problem: `task workflow failed at stage ${row?.stage ?? 'none'}` });
      continue;
    }
    lost.push({
      item: id,
      problem: `stage ${row?.stage ?? '(no row)'}; task workflow ${childStatus ?? 'unreachable'}`,
    });
  }
  for (const r of rows)
    if (r.idx >= tasks)
      duplicated.push({ item: r.task_id, problem: `index ${r.idx} beyond the ${tasks} tasks` });

  const summary = run.result as { tasks: number; kept: number; rejected: number; failed: number } | undefined;
  if (run.status === 'COMPLETED' && summary) {
    const counted = summary.kept + summary.rejected + summary.failed;
    if (counted > tasks)
      duplicated.push({
        item: run.workflowId,
        problem: `summary counts ${counted} outcomes for ${tasks} tasks`,
      });
    if (summary.kept !== dbKept || summary.rejected !== dbRejected) {
      notes.push(
        `summary kept/rejected ${summary.kept}/${summary.rejected}, database ${dbKept}/${dbRejected}`,
      );
      if (summary.kept > dbKept)
        duplicated.push({
          item: run.workflowId,
          problem: `summary counts ${summary.kept} kept, database holds ${dbKept}`,
        });
    }
    // The exported dataset: every kept task exactly once.
    const file = path.join(home, 'datasets', datasetDirectoryName(run.workflowId), 'tasks.jsonl');
    const text = await readFile(file, 'utf8').catch(() => undefined);
    if (text === undefined) notes.push(`no exported dataset at ${file}`);
    else {
      const ids = text
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { task_id: string }).task_id);
      const seen = new Map<string, number>();
      for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
      for (const [id, n] of seen)
        if (n > 1) duplicated.push({ item: id, problem: `${n} lines in tasks.jsonl` });
      for (const r of rows)
        if (r.stage === 'kept' && !seen.has(r.task_id))
          lost.push({ item: r.task_id, problem: 'kept but not in the exported tasks.jsonl' });
    }
  }
  return {
    workflowId: run.workflowId,
    kind: 'Synthesis',
    status: run.status ?? 'unknown',
    items: tasks,
    lost,
    duplicated,
    failedRecorded,
    notes,
  };
}

// ---------------------------------------------------------------------------------------------
// GRPO

export interface GrpoShape {
  readonly iterations: number;
  readonly tasks: number;
  readonly rollouts: number;
}

export async function auditGrpo(
  db: string,
  observer: TemporalObserver,
  run: RunRecord,
  shape: GrpoShape,
  checkpoints: string,
  replays: ReadonlyMap<string, Replay>,
): Promise<RunAudit> {
  const lost: Finding[] = [];
  const duplicated: Finding[] = [];
  const notes: string[] = [];
  const runId = run.workflowId;
  const episodes = await query<{ episode_id: string; ended: boolean; judged: number }>(
    db,
    `SELECT e.episode_id, e.end_reason IS NOT NULL AS ended,
            (SELECT count(*)::int FROM judgements j WHERE j.episode_id = e.episode_id) AS judged
       FROM episodes e WHERE e.purpose = 'rollout' AND starts_with(e.episode_id, $1)`,
    [`${runId}/`],
  );
  const batches = await query<{ step: number; episode_id: string }>(
    db,
    'SELECT step, episode_id FROM trainer_batches WHERE run_id = $1',
    [runId],
  );
  const inBatch = new Map<string, number[]>();
  for (const b of batches) inBatch.set(b.episode_id, [...(inBatch.get(b.episode_id) ?? []), b.step]);
  const found = new Map(episodes.map((e) => [e.episode_id, e]));
  const expected = new Set<string>();
  const completed = run.status === 'COMPLETED';
  for (let it = 0; it < shape.iterations; it++) {
    for (let t = 0; t < shape.tasks; t++) {
      for (let s = 0; s < shape.rollouts; s++) {
        const id = trainingEpisodeId(runId, it, fixtureTaskId(FIXTURE_SYNTHESIS_RUN, t), s, 'rollout');
        expected.add(id);
        const e = found.get(id);
        const steps = inBatch.get(id) ?? [];
        const problems: string[] = [];
        if (!e) problems.push('never played');
        else {
          if (!e.ended) problems.push('not ended');
          if (e.judged !== 1) problems.push(`judged ${e.judged} times`);
        }
        if (!steps.includes(it + 1)) problems.push(`not in the batch of step ${it + 1}`);
        if (problems.length && completed) lost.push({ item: id, problem: problems.join(', ') });
        else if (problems.length) notes.push(`${id}: ${problems.join(', ')} (run ${run.status})`);
        if (steps.length > 1)
          duplicated.push({ item: id, problem: `in the batches of steps ${steps.join(', ')}` });
      }
    }
  }
  for (const e of episodes)
    if (!expected.has(e.episode_id))
      duplicated.push({ item: e.episode_id, problem: 'a rollout the spec does not ask for' });
  for (const b of batches)
    if (!expected.has(b.episode_id))
      duplicated.push({ item: b.episode_id, problem: `batch row of step ${b.step} for an unknown rollout` });

  const metrics = await query<{ iteration: number; metrics: { rolloutsJudged?: number; episodes?: number } }>(
    db,
    'SELECT iteration, metrics FROM training_metrics WHERE run_id = $1 ORDER BY iteration',
    [runId],
  );
  for (const m of metrics) {
    if (m.iteration >= shape.iterations)
      duplicated.push({
        item: `${runId} iteration ${m.iteration}`,
        problem: 'metrics of an iteration beyond the spec',
      });
    const per = shape.tasks * shape.rollouts;
    if ((m.metrics.rolloutsJudged ?? per) > per || (m.metrics.episodes ?? per) > per) {
      duplicated.push({
        item: `${runId} iteration ${m.iteration}`,
        problem: `metrics count ${m.metrics.rolloutsJudged} judged / ${m.metrics.episodes} episodes of ${per}`,
      });
    }
  }

  const steps = await auditSteps(observer, run, shape, checkpoints, replays);
  if (!completed) notes.push(`run ${run.status}: steps and rollouts not finished are not counted as lost`);
  return {
    workflowId: runId,
    kind: 'GrpoTraining',
    status: run.status ?? 'unknown',
    items: expected.size,
    lost,
    duplicated,
    failedRecorded: [],
    steps,
    notes,
  };
}

interface StepRecordFile {
  step: number;
  metrics: Record<string, number | null>;
}

/** The step records of a run's checkpoint directory (record.json of every applied step), in step order. */
async function stepRecords(checkpoints: string, runId: string): Promise<StepRecordFile[]> {
  const runDir = path.join(checkpoints, encodeURIComponent(runId));
  const entries = await readdir(runDir).catch(() => [] as string[]);
  const records: StepRecordFile[] = [];
  for (const name of entries.filter((e) => /^step-\d{8}$/.test(e)).sort()) {
    const text = await readFile(path.join(runDir, name, 'record.json'), 'utf8').catch(() => undefined);
    if (text) records.push(JSON.parse(text) as StepRecordFile);
  }
  return records;
}

/**
 * Replays the recorded steps of every run in `runIds` in one Python process (torch loads once), or
 * in one torchrun group of `ranks` when the run's trainer was a group, and returns, per run, what
 * it found.
 */
export async function replayRuns(
  checkpoints: string,
  runIds: readonly string[],
  env: Record<string, string>,
  ranks = 1,
): Promise<Map<string, Replay>> {
  const runs: Array<[string, number]> = [];
  const out = new Map<string, Replay>();
  for (const runId of runIds) {
    const last = (await stepRecords(checkpoints, runId)).at(-1)?.step;
    if (last === undefined) out.set(runId, { error: 'no step applied' });
    else runs.push([runId, last]);
  }
  if (runs.length === 0) return out;
  try {
    const found = await replayRecordedSteps(checkpoints, runs, env, ranks);
    for (const [runId] of runs) out.set(runId, found[runId] ?? { error: 'not replayed' });
  } catch (error) {
    for (const [runId] of runs) out.set(runId, { error: (error as Error).message.slice(0, 500) });
  }
  return out;
}

async function auditSteps(
  observer: TemporalObserver,
  run: RunRecord,
  shape: GrpoShape,
  checkpoints: string,
  replays: ReadonlyMap<string, Replay>,
): Promise<StepAudit> {
  const records = await stepRecords(checkpoints, run.workflowId);
  const recorded = records.map((r) => r.step);
  const expected = Array.from({ length: shape.iterations }, (_, i) => i + 1);
  const expectedAdamUpdates = records.reduce(
    (n, r) => n + Number(r.metrics['num_updates'] ?? 0) - Number(r.metrics['skipped_updates'] ?? 0),
    0,
  );
  const found = replays.get(run.workflowId) ?? { error: 'not replayed' };
  const adamUpdates = 'adamSteps' in found ? Math.max(...found.adamSteps) : null;
  const replay: StepAudit['replay'] =
    'error' in found
      ? { error: found.error }
      : { sameMetrics: found.sameMetrics, sameWeights: found.sameWeights, differences: found.differences };
  const perStep = shape.tasks; // mini-batch of one group: one AdamW update per task
  const appliedTwice =
    adamUpdates === null ? 0 : Math.max(0, Math.round((adamUpdates - expectedAdamUpdates) / perStep));
  return {
    expected,
    recorded,
    skipped: run.status === 'COMPLETED' ? expected.filter((s) => !recorded.includes(s)) : [],
    appliedTwice: appliedTwice + recorded.filter((s) => s > shape.iterations).length,
    adamUpdates,
    expectedAdamUpdates,
    replay,
    replayedCalls: await replayedTrainerCalls(observer, run.workflowId),
  };
}

async function replayedTrainerCalls(observer: TemporalObserver, workflowId: string): Promise<number> {
  const results = await observer.activityResults(workflowId, 'trainer.grpoStep');
  return results.filter((r) => (r as { replayed?: boolean } | undefined)?.replayed).length;
}

// ---------------------------------------------------------------------------------------------
// Model calls: answers delivered by the servers against the ledger

/** One answer a server (or the policy proxy) handed over in full. */
export interface Answer {
  readonly role: string | undefined;
  readonly at: number;
  /** Request arrival, when known. */
  readonly receivedAt?: number;
  readonly remotePort: number | undefined;
  readonly bodyHash: string;
}

/** An endpoint the workload called: its URL as the specs name it, and every answer it delivered. */
export interface AnswerSource {
  readonly name: string;
  readonly url: string;
  readonly answers: readonly Answer[];
  /** Every request received, faulted ones included (when known): who else asked the same thing, when. */
  readonly arrivals?: ReadonlyArray<{ at: number; remotePort: number | undefined; bodyHash: string }>;
}

/**
 * A SIGKILL of a process that calls the model servers (a CPU worker, the model gateway): when it
 * was sent, when the process was gone, and the local TCP ports it held.
 */
export interface KillRecord {
  readonly pid: number;
  /** What was killed: 'cpu-worker' (the default) or 'gateway'. */
  readonly process?: 'cpu-worker' | 'gateway';
  readonly at: number;
  diedAt?: number;
  readonly ports: readonly number[];
}

/**
 * An answer the server finished sending this long after the process died still went to the dead
 * process: the server's write completes into the kernel before the peer's reset comes back.
 */
const AFTER_DEATH_MS = 1_000;

/** One request body answered again, and what explains it. */
export interface Repeat {
  readonly source: string;
  readonly role: string;
  readonly firstAt: number;
  readonly againAt: number;
  readonly firstPort: number | undefined;
  readonly againPort: number | undefined;
  /**
   * at-kill: the first answer went to a connection of a process (a CPU worker, the gateway)
   * SIGKILLed before the second;
   * concurrent: another connection sent the same request while the first was being answered (two
   * worker processes asking for one call at once, each missing the cache; the single flight that
   * joins identical calls works per process); other: neither (also two distinct calls that send
   * the same body, such as a GRPO judge call of the same transcript under another policy version).
   */
  readonly cause: 'at-kill' | 'concurrent' | 'other';
  /** at-kill: the killed process, and what it was. */
  readonly killedPid?: number;
  readonly killedProcess?: 'cpu-worker' | 'gateway';
}

export interface ModelCallAudit {
  readonly byRole: Array<{
    source: string;
    role: string;
    answered: number;
    ledgerRows: number;
    /** answered - ledgerRows: answers the ledger does not hold, i.e. paid for and asked again. */
    paidTwice: number;
    /** Of those, explained by an answer on the wire at a SIGKILL (at most the role's at-kill repeats). */
    onTheWireAtKill: number;
    /** Of those, the ones at a SIGKILL of the gateway (an answer it had received and not yet stored). */
    onTheWireAtGatewayKill: number;
    /** Of the rest, explained by the same call in flight on two workers at once (at most the role's concurrent repeats). */
    concurrent: number;
  }>;
  /** Answers delivered minus ledger rows, over every role of every source. */
  readonly paidTwice: number;
  /**
   * Of those, answers whose first delivery went to a connection of a process (a CPU worker, the
   * gateway) that was SIGKILLed afterwards (the answer was on the wire, or not yet stored, when the
   * process died): the window at-least-once delivery leaves open. Counted per role as min(paid
   * twice, at-kill repeats).
   */
  readonly onTheWireAtKill: number;
  /** Of those, at a SIGKILL of the gateway. */
  readonly onTheWireAtGatewayKill: number;
  /**
   * Of the rest, the same call asked by two worker processes at once (both missed the cache; the
   * single flight joining identical calls works within one process).
   */
  readonly concurrent: number;
  /** The rest: answers paid for twice that neither explains. */
  readonly other: number;
  /** Every request body answered more than once, with its likely cause (a cross-check). */
  readonly repeats: Repeat[];
}

export async function auditModelCalls(
  db: string,
  sources: readonly AnswerSource[],
  kills: readonly KillRecord[],
): Promise<ModelCallAudit> {
  const rows = await query<{ endpoint: string; role: string | null; n: number }>(
    db,
    'SELECT endpoint, role, count(*)::int AS n FROM llm_calls GROUP BY 1, 2',
  );
  const byRole: ModelCallAudit['byRole'] = [];
  const repeats: Repeat[] = [];
  for (const source of sources) {
    const endpoint = normalizeBaseUrl(source.url);
    const roleOf = (a: Answer) => a.role ?? '(none)';
    // The same request body answered more than once: who got the first answer?
    const byBody = new Map<string, Answer[]>();
    for (const a of source.answers)
      byBody.set(`${roleOf(a)}\n${a.bodyHash}`, [...(byBody.get(`${roleOf(a)}\n${a.bodyHash}`) ?? []), a]);
    for (const group of byBody.values()) {
      group.sort((x, y) => x.at - y.at);
      for (let i = 1; i < group.length; i++) {
        const first = group[i - 1]!;
        const again = group[i]!;
        const killed = kills.find(
          (k) =>
            first.remotePort !== undefined &&
            k.ports.includes(first.remotePort) &&
            first.at <= (k.diedAt ?? k.at) + AFTER_DEATH_MS &&
            k.at <= again.at,
        );
        const askedMeanwhile = (at: number, port: number | undefined) =>
          port !== first.remotePort && at <= first.at && at >= (first.receivedAt ?? first.at) - 10_000;
        const concurrent = source.arrivals
          ? source.arrivals.some((a) => a.bodyHash === first.bodyHash && askedMeanwhile(a.at, a.remotePort))
          : again.receivedAt !== undefined && askedMeanwhile(again.receivedAt, again.remotePort);
        repeats.push({
          source: source.name,
          role: roleOf(first),
          firstAt: first.at,
          againAt: again.at,
          firstPort: first.remotePort,
          againPort: again.remotePort,
          cause: killed ? 'at-kill' : concurrent ? 'concurrent' : 'other',
          ...(killed ? { killedPid: killed.pid, killedProcess: killed.process ?? 'cpu-worker' } : {}),
        });
      }
    }
    const roles = new Set([
      ...source.answers.map(roleOf),
      ...rows.filter((r) => r.endpoint === endpoint).map((r) => r.role ?? '(none)'),
    ]);
    for (const role of roles) {
      const answered = source.answers.filter((a) => roleOf(a) === role).length;
      const ledgerRows = rows.find((r) => r.endpoint === endpoint && (r.role ?? '(none)') === role)?.n ?? 0;
      const count = (cause: Repeat['cause']) =>
        repeats.filter((r) => r.source === source.name && r.role === role && r.cause === cause).length;
      const paidTwice = answered - ledgerRows;
      const onTheWireAtKill = Math.min(Math.max(0, paidTwice), count('at-kill'));
      const atGatewayKills = repeats.filter(
        (r) =>
          r.source === source.name &&
          r.role === role &&
          r.cause === 'at-kill' &&
          r.killedProcess === 'gateway',
      ).length;
      const onTheWireAtGatewayKill = Math.min(onTheWireAtKill, atGatewayKills);
      const concurrent = Math.min(Math.max(0, paidTwice - onTheWireAtKill), count('concurrent'));
      byRole.push({
        source: source.name,
        role,
        answered,
        ledgerRows,
        paidTwice,
        onTheWireAtKill,
        onTheWireAtGatewayKill,
        concurrent,
      });
    }
  }
  // A role with fewer answers than rows (negative) must not hide one paid twice elsewhere.
  const paidTwice = byRole.reduce((n, r) => n + Math.max(0, r.paidTwice), 0);
  const onTheWireAtKill = byRole.reduce((n, r) => n + r.onTheWireAtKill, 0);
  const onTheWireAtGatewayKill = byRole.reduce((n, r) => n + r.onTheWireAtGatewayKill, 0);
  const concurrent = byRole.reduce((n, r) => n + r.concurrent, 0);
  const other = paidTwice - onTheWireAtKill - concurrent;
  return { byRole, paidTwice, onTheWireAtKill, onTheWireAtGatewayKill, concurrent, other, repeats };
}

// ---------------------------------------------------------------------------------------------
// Tool mappings: every answer an episode got for (task, tool, canonical args) against the mapping

export interface MappingAudit {
  /** Tool calls in transcripts that the mapping answers (valid calls of task tools). */
  readonly checkedCalls: number;
  readonly distinctKeys: number;
  /** (task, tool, args) answered with more than one response across transcripts, or unlike the table. */
  readonly inconsistencies: Finding[];
}

export async function auditMappings(db: string): Promise<MappingAudit> {
  const tasks = await query<{ task_id: string; tools: FunctionTool[] | null }>(
    db,
    `SELECT task_id, tools FROM tasks WHERE task_id IN (SELECT DISTINCT task_id FROM episodes)`,
  );
  const toolsOf = new Map(tasks.map((t) => [t.task_id, [...(t.tools ?? []), ASK_USER_TOOL]]));
  const mappings = await query<{ task_id: string; tool: string; args_key: string; response: unknown }>(
    db,
    'SELECT task_id, tool, args_key, response FROM tool_mappings',
  );
  const table = new Map(mappings.map((m) => [`${m.task_id}\n${m.tool}\n${m.args_key}`, m.response]));
  const seen = new Map<string, Set<string>>();
  const inconsistencies: Finding[] = [];
  let checkedCalls = 0;
  // Transcripts are read in pages: a long run holds many.
  for (let after = ''; ;) {
    const page = await query<{ episode_id: string; task_id: string; messages: Array<Record<string, any>> }>(
      db,
      'SELECT episode_id, task_id, messages FROM episodes WHERE episode_id > $1 ORDER BY episode_id LIMIT 200',
      [after],
    );
    if (page.length === 0) break;
    after = page.at(-1)!.episode_id;
    for (const e of page) {
      const tools = toolsOf.get(e.task_id) ?? [ASK_USER_TOOL];
      const answers = new Map<string, string>();
      for (const m of e.messages) if (m.role === 'tool') answers.set(m.tool_call_id, String(m.content));
      for (const m of e.messages) {
        if (m.role !== 'assistant' || !Array.isArray(m.tool_calls)) continue;
        for (const call of m.tool_calls) {
          const name = call.function?.name ?? '';
          if (name === ASK_USER_TOOL_NAME) continue;
          const check = validateToolCall(tools, { name, arguments: call.function?.arguments ?? '' });
          const content = answers.get(call.id);
          // Calls after the user ended the conversation are answered without being run.
          if (!check.ok || content === undefined || content === notRunObservation(name)) continue;
          const key = `${e.task_id}\n${name}\n${argsKey(check.args)}`;
          const stored = table.get(key);
          checkedCalls++;
          if (stored === undefined) {
            inconsistencies.push({
              item: `${e.episode_id} ${name}`,
              problem: 'answered, but the mapping has no entry for the call',
            });
            continue;
          }
          const expected = typeof stored === 'string' ? stored : canonicalJson(stored);
          if (content !== expected) {
            inconsistencies.push({
              item: `${e.episode_id} ${name}`,
              problem: `answered ${content.slice(0, 80)}, mapping says ${expected.slice(0, 80)}`,
            });
          }
          seen.set(key, (seen.get(key) ?? new Set()).add(content));
        }
      }
    }
  }
  for (const [key, contents] of seen) {
    if (contents.size > 1)
      inconsistencies.push({
        item: key.replaceAll('\n', ' / '),
        problem: `${contents.size} different answers in transcripts`,
      });
  }
  return { checkedCalls, distinctKeys: seen.size, inconsistencies };
}
