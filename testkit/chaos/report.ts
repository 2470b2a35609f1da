/** The chaos run's figures: totals for the tests and the Markdown tables bench/chaos.ts prints. */
import type { ChaosResult } from './harness.js';
import type { RunAudit } from './audit.js';
import { FAULT_KINDS, type ChaosFaultKind, type FaultRecord } from './types.js';

/** Why a GRPO run's fresh replay is not bit-identical: it errored, or its first difference. */
export interface ReplayFinding {
  readonly workflowId: string;
  /** 'error': the replay could not run; 'metrics' / 'weights': the first part that differs. */
  readonly part: 'error' | 'metrics' | 'weights';
  readonly detail: string;
}

/** Every GRPO run whose replay is not identical, and which part differs first. */
export function replayFindings(audits: readonly RunAudit[]): ReplayFinding[] {
  const out: ReplayFinding[] = [];
  for (const a of audits) {
    const replay = a.steps?.replay;
    if (!replay) continue;
    if ('error' in replay) {
      out.push({ workflowId: a.workflowId, part: 'error', detail: replay.error });
      continue;
    }
    const first = replay.differences[0];
    if (first) {
      out.push({
        workflowId: a.workflowId,
        part: first.part,
        detail: `step ${first.step} ${first.part} ${first.field}: recorded ${first.recorded}, replayed ${first.replayed}`,
      });
    } else if (!replay.sameWeights || !replay.sameMetrics.every(Boolean)) {
      out.push({
        workflowId: a.workflowId,
        part: replay.sameMetrics.every(Boolean) ? 'weights' : 'metrics',
        detail: `metrics per step ${JSON.stringify(replay.sameMetrics)}, final weights ${replay.sameWeights ? 'same' : 'differ'}`,
      });
    }
  }
  return out;
}

/** The numbers every chaos run is judged by (the CI test asserts the zero ones). */
export interface ChaosTotals {
  readonly runs: number;
  readonly runsCompleted: number;
  readonly synthesisTasks: number;
  readonly grpoRollouts: number;
  readonly evaluationTrials: number;
  readonly tasksLost: number;
  readonly tasksDuplicated: number;
  readonly tasksFailedRecorded: number;
  readonly stepsExpected: number;
  readonly stepsAppliedTwice: number;
  readonly stepsSkipped: number;
  /** GRPO runs whose weights a fresh replay of the recorded batches reproduces bit for bit. */
  readonly replaysIdentical: number;
  /** The others, by the first part that differs: the replay errored, its metrics or its weights differ. */
  readonly replaysErrored: number;
  readonly replaysMetricsDiffer: number;
  readonly replaysWeightsDiffer: number;
  readonly grpoRuns: number;
  readonly modelAnswers: number;
  readonly paidTwice: number;
  readonly paidTwiceOnTheWireAtKill: number;
  /** Of those, at a SIGKILL of the gateway: answers it had received and not yet stored. */
  readonly paidTwiceAtGatewayKill: number;
  /** The most answers of one SIGKILL that were asked again (repeats of the server logs, by killed process). */
  readonly paidTwiceAtOneKillMax: number;
  readonly paidTwiceConcurrent: number;
  readonly paidTwiceOther: number;
  readonly mappingInconsistencies: number;
  readonly unplannedExits: number;
  /** Trainer group: restarts torchrun made that no rank kill (j) came just before. */
  readonly groupRestartsUnexplained: number;
  readonly faultsByKind: Record<ChaosFaultKind, number>;
  /** Activity retries no injected fault explains (retries.ts). */
  readonly retriesUnexplained: number;
  /** (g): model requests a client gave up on in a slow window, and retries no fault explains started in one. */
  readonly slowModelGiveUps: number;
  readonly slowModelRetries: number;
}

export function totals(result: ChaosResult): ChaosTotals {
  const synthesis = result.audits.filter((a) => a.kind === 'Synthesis');
  const grpo = result.audits.filter((a) => a.kind === 'GrpoTraining');
  const sum = (xs: number[]) => xs.reduce((n, x) => n + x, 0);
  const faultsByKind = Object.fromEntries(
    FAULT_KINDS.map((k) => [k, result.faults.filter((f) => f.kind === k).length]),
  ) as Record<ChaosFaultKind, number>;
  const findings = replayFindings(result.audits);
  return {
    runs: result.runs.length,
    runsCompleted: result.runs.filter((r) => r.status === 'COMPLETED').length,
    synthesisTasks: sum(synthesis.map((a) => a.items)),
    grpoRollouts: sum(grpo.map((a) => a.items)),
    evaluationTrials: sum(result.audits.filter((a) => a.kind === 'Evaluation').map((a) => a.items)),
    tasksLost: sum(result.audits.map((a) => a.lost.length)),
    tasksDuplicated: sum(result.audits.map((a) => a.duplicated.length)),
    tasksFailedRecorded: sum(result.audits.map((a) => a.failedRecorded.length)),
    stepsExpected: sum(grpo.map((a) => a.steps?.expected.length ?? 0)),
    stepsAppliedTwice: sum(grpo.map((a) => a.steps?.appliedTwice ?? 0)),
    stepsSkipped: sum(grpo.map((a) => a.steps?.skipped.length ?? 0)),
    replaysIdentical: grpo.filter(
      (a) =>
        a.steps &&
        'sameWeights' in a.steps.replay &&
        a.steps.replay.sameWeights &&
        a.steps.replay.sameMetrics.every(Boolean),
    ).length,
    replaysErrored: findings.filter((f) => f.part === 'error').length,
    replaysMetricsDiffer: findings.filter((f) => f.part === 'metrics').length,
    replaysWeightsDiffer: findings.filter((f) => f.part === 'weights').length,
    grpoRuns: grpo.length,
    modelAnswers: sum(result.modelCalls.byRole.map((r) => r.answered)),
    paidTwice: result.modelCalls.paidTwice,
    paidTwiceOnTheWireAtKill: result.modelCalls.onTheWireAtKill,
    paidTwiceAtGatewayKill: result.modelCalls.onTheWireAtGatewayKill,
    paidTwiceAtOneKillMax: Math.max(
      0,
      ...Object.values(
        result.modelCalls.repeats
          // Roles whose answers all have their ledger row repeat bodies legitimately (e.g. a GRPO
          // judge call of the same transcript under another policy version): not paid twice.
          .filter((r) => r.cause === 'at-kill' && r.killedPid !== undefined)
          .filter((r) =>
            result.modelCalls.byRole.some(
              (b) => b.source === r.source && b.role === r.role && b.paidTwice > 0,
            ),
          )
          .reduce<Record<number, number>>(
            (m, r) => ({ ...m, [r.killedPid!]: (m[r.killedPid!] ?? 0) + 1 }),
            {},
          ),
      ),
    ),
    paidTwiceConcurrent: result.modelCalls.concurrent,
    paidTwiceOther: result.modelCalls.other,
    mappingInconsistencies: result.mappings.inconsistencies.length,
    unplannedExits: result.unplannedExits.length,
    groupRestartsUnexplained: result.trainer?.groupRestartsUnexplained?.length ?? 0,
    faultsByKind,
    retriesUnexplained: result.activityRetries.filter((r) => !r.explainedBy).length,
    slowModelGiveUps: sum(
      result.faults.filter((f) => f.kind === 'slow-model').map((f) => f.interrupted ?? 0),
    ),
    slowModelRetries: result.activityRetries.filter((r) => r.inSlowWindow && !r.explainedBy).length,
  };
}

/** Nearest-rank percentile of `values` (p in 0..1); undefined when empty. */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];
}

const s = (ms: number | undefined) => (ms === undefined ? '–' : `${(ms / 1000).toFixed(1)} s`);

/** The letter of each kind, as the harness and the README name them ((e) is the random model faults). */
export const KIND_LETTER: Record<ChaosFaultKind, string> = {
  'cpu-worker-kill': 'a',
  'trainer-kill': 'b',
  'temporal-restart': 'c',
  'postgres-restart': 'd',
  'gateway-kill': 'f',
  'slow-model': 'g',
  'checkpoint-disk-full': 'h',
  'evaluation-worker-kill': 'i',
  'trainer-rank-kill': 'j',
};

const LABEL: Record<ChaosFaultKind, string> = {
  'cpu-worker-kill': '(a) CPU worker SIGKILL + restart',
  'trainer-kill': '(b) trainer worker SIGKILL + restart',
  'temporal-restart': '(c) Temporal dev server SIGKILL + restart (same db file)',
  'postgres-restart': "(d) PostgreSQL restart (the harness's own instance)",
  'gateway-kill': '(f) model gateway SIGKILL with calls in flight + restart',
  'slow-model': '(g) model server answering in 5–20 s for minutes',
  'checkpoint-disk-full': "(h) checkpoint directory's disk full",
  'evaluation-worker-kill': '(i) evaluation worker SIGKILL (with its trial processes) + restart',
  'trainer-rank-kill': '(j) trainer rank SIGKILL (rank 1 of a 2-rank torchrun group)',
};

const RECOVERY: Record<ChaosFaultKind, string> = {
  'cpu-worker-kill':
    'every activity running on the killed worker started again on a live one (or finished), and a CPU worker serving (the other one, else the replacement)',
  'trainer-kill': 'the trainer activity cut off started again (or finished), and the new trainer polling',
  'temporal-restart': 'a run records finished work (an activity or child completed) on the restarted server',
  'postgres-restart': 'the pipeline writes to PostgreSQL again (model call, turn, stage, judgement)',
  'gateway-kill': 'a model answer is recorded through the restarted gateway',
  'slow-model': 'the slowed server answers a request that arrived after the window (back = the window)',
  'checkpoint-disk-full':
    'the trainer step the full disk failed runs again (a later attempt started) or has finished, once the space is freed (back = the space freed; no step running at the fault: recovered = back)',
  'evaluation-worker-kill':
    'every trial activity running on the killed evaluation worker started again on the restarted one (or finished), and it polls (back = it polls)',
  'trainer-rank-kill':
    'torchrun restarted the group (back = the new rank 0 polls) and every activity the group was running (a trainer step) has run again and finished',
};

/** What the "work cut off" column counts, per kind. */
const CUT: Partial<Record<ChaosFaultKind, string>> = {
  'cpu-worker-kill': 'activities running on it',
  'trainer-kill': 'activities running on it',
  'gateway-kill': 'model calls in flight in it',
  'slow-model': 'requests a client gave up on',
  'checkpoint-disk-full': 'attempts of the running trainer step that failed for want of space',
  'evaluation-worker-kill': 'activities running on it (trials, and a listing or summary if one ran)',
  'trainer-rank-kill': 'activities running on the group',
};

export function markdown(result: ChaosResult): string {
  const t = totals(result);
  const findings = replayFindings(result.audits);
  const grpoSteps =
    `${t.stepsAppliedTwice} / ${t.stepsSkipped} of ${t.stepsExpected} (fresh replay bit-identical: ${t.replaysIdentical} of ${t.grpoRuns} runs` +
    (findings.length
      ? `; not identical: ${findings.map((f) => `${f.workflowId.replace(/-[a-z0-9]+-r/, '-r')} ${f.part === 'error' ? 'errored' : `${f.part} differ`} (${f.detail.slice(0, 200)})`).join('; ')}`
      : '') +
    ')';
  const lines = [
    '| result | value |',
    '|---|---|',
    `| runs completed | ${t.runsCompleted} / ${t.runs} (${result.runs.map((r) => `${r.workflowId.replace(/-[a-z0-9]+-r/, '-r')} ${r.status}`).join(', ')}) |`,
    `| tasks lost | ${t.tasksLost} (of ${t.synthesisTasks} synthesis tasks${t.evaluationTrials ? `, ${t.grpoRollouts} GRPO rollouts and ${t.evaluationTrials} evaluation trials` : ` and ${t.grpoRollouts} GRPO rollouts`}) |`,
    `| tasks duplicated | ${t.tasksDuplicated} |`,
    `| tasks failed, with the failure recorded (not lost) | ${t.tasksFailedRecorded} |`,
    `| optimizer steps applied twice / skipped | ${grpoSteps} |`,
    `| model calls paid twice, all causes | ${t.paidTwice} (of ${t.modelAnswers} answers delivered; CPU workers call models ${result.options.modelGateway ? 'through the model gateway' : 'directly, no gateway'}) |`,
    `| … of which: answer on the wire at a SIGKILL of a CPU worker or the gateway | ${t.paidTwiceOnTheWireAtKill}, ${t.paidTwiceAtGatewayKill} of them at a gateway kill (${t.faultsByKind['cpu-worker-kill']} CPU worker kills, ${t.faultsByKind['gateway-kill']} gateway kills; at most ${t.paidTwiceAtOneKillMax} at one kill) |`,
    `| … of which: one call in flight on both CPU workers at once (each missed the cache) | ${t.paidTwiceConcurrent} |`,
    `| … of which: any other cause | ${t.paidTwiceOther} |`,
    `| mapping inconsistencies (same task, tool, canonical args; different answer) | ${t.mappingInconsistencies} (${result.mappings.checkedCalls} tool calls in transcripts checked, ${result.mappings.distinctKeys} distinct calls) |`,
    `| worker processes that exited by themselves | ${t.unplannedExits} |`,
    ...(result.trainer && result.trainer.ranks > 1
      ? [
          `| trainer group restarts no rank kill explains | ${t.groupRestartsUnexplained} (of ${result.trainer.groupRestarts ?? 0} restarts torchrun made of the group) |`,
        ]
      : []),
    `| activity retries no injected fault explains | ${t.retriesUnexplained} (of ${result.activityRetries.length} retries) |`,
    `| slow model server: requests given up / retries no fault explains, in the slow windows | ${t.slowModelGiveUps} / ${t.slowModelRetries} |`,
    '',
    '| fault | injected | while runs were in progress | work cut off | back: p50 / p99 | recovered: p50 / p99 / max | not recovered |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const kind of result.options.kinds) {
    const fs: FaultRecord[] = result.faults.filter((f) => f.kind === kind);
    const back = fs.flatMap((f) => (f.backMs === undefined ? [] : [f.backMs]));
    const recovered = fs.flatMap((f) => (f.recoveryMs === undefined ? [] : [f.recoveryMs]));
    const cut = fs.some((f) => f.interrupted !== undefined)
      ? String(fs.reduce((n, f) => n + (f.interrupted ?? 0), 0))
      : '–';
    const skipped = result.skipped.filter((x) => x.kind === kind).length;
    lines.push(
      `| ${LABEL[kind]} | ${fs.length}${skipped ? ` (${skipped} skipped)` : ''} | ${fs.filter((f) => f.runsInProgress > 0).length} | ${cut} | ` +
        `${s(percentile(back, 0.5))} / ${s(percentile(back, 0.99))} | ` +
        `${s(percentile(recovered, 0.5))} / ${s(percentile(recovered, 0.99))} / ${s(percentile(recovered, 1))} | ${fs.length - recovered.length} |`,
    );
  }
  // Answers paid twice that neither a kill nor a concurrent call explains: when, and the fault just before.
  const unexplained = result.modelCalls.repeats
    .filter((r) => r.cause === 'other')
    .filter((r) =>
      result.modelCalls.byRole.some(
        (b) => b.source === r.source && b.role === r.role && b.paidTwice > b.onTheWireAtKill + b.concurrent,
      ),
    );
  if (unexplained.length) {
    const at = (ms: number) => (ms - result.runsStartedAt) / 1000;
    const roles = result.modelCalls.byRole
      .filter((b) => b.paidTwice > b.onTheWireAtKill + b.concurrent)
      .map(
        (b) =>
          `${b.source} ${b.role}: ${b.answered} answered, ${b.ledgerRows} ledger rows, ${b.onTheWireAtKill} at a kill, ${b.concurrent} concurrent`,
      );
    lines.push(
      '',
      `> Paid twice, unexplained: ${roles.join('; ')}.`,
      `> Request bodies answered twice in roles with unexplained double payments: ${unexplained
        .slice(0, 10)
        .map((r) => {
          const before = result.faults.filter((f) => f.atS <= at(r.firstAt) + 1).at(-1);
          return `${r.role} first at ${at(r.firstAt).toFixed(1)} s, again at ${at(r.againAt).toFixed(1)} s (${r.cause}; last fault before: ${before ? `${before.kind} #${before.seq} at ${before.atS} s` : 'none'})`;
        })
        .join('; ')}.`,
    );
  }
  if (t.paidTwiceAtGatewayKill > 0) {
    const inFlight = result.faults
      .filter((f) => f.kind === 'gateway-kill')
      .reduce((n, f) => n + (f.interrupted ?? 0), 0);
    lines.push(
      '',
      `> Paid twice at a gateway kill: ${t.paidTwiceAtGatewayKill} answer(s) the model server had handed to the gateway ` +
        `(on one of its TCP connections, read while it was stopped just before the SIGKILL) that it had not yet written ` +
        `to the ledger; the retried call found no row and paid again (${inFlight} calls were in flight at the ` +
        `${t.faultsByKind['gateway-kill']} kills). At-least-once delivery leaves this window open at whichever process ` +
        'pays (the gateway, or a CPU worker without one): from the answer arriving to its row committed. Only a ' +
        'provider that deduplicates requests by an idempotency key could close it.',
    );
  }
  const retries = result.activityRetries;
  const mostAttempts = [...retries].sort((x, y) => y.attempt - x.attempt)[0];
  const heartbeat = retries.filter((r) => r.cause === 'heartbeat-timeout');
  const notAfterKill = heartbeat.filter((r) => !r.afterKill);
  const byFault = FAULT_KINDS.map((k) => [k, retries.filter((r) => r.explainedBy === k).length] as const)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`);
  const unexplainedRetries = retries.filter((r) => !r.explainedBy);
  lines.push(
    '',
    `> Activity retries: ${retries.length} attempts after a failed one: ${heartbeat.length} after a heartbeat timeout ` +
      `(${heartbeat.length - notAfterKill.length} within 90 s after a kill of a process running that activity type, ` +
      `${notAfterKill.length} not: ${notAfterKill.map((r) => `${r.type} at ${r.atS} s`).join(', ') || 'none'}), ` +
      `${retries.filter((r) => r.cause.startsWith('failure')).length} after a failure (e.g. a dropped database connection), ` +
      `${retries.filter((r) => r.cause !== 'heartbeat-timeout' && !r.cause.startsWith('failure')).length} after another timeout. ` +
      `Explained by the fault before them: ${byFault.join(', ') || 'none'}; by none: ${
        unexplainedRetries
          .slice(0, 10)
          .map((r) => `${r.type} attempt ${r.attempt} at ${r.atS} s (${r.cause.slice(0, 100)})`)
          .join('; ') || 'none'
      }.` +
      (mostAttempts
        ? ` Most attempts of one activity: ${mostAttempts.type} reached attempt ${mostAttempts.attempt} ` +
          `(its last failure: ${mostAttempts.cause.slice(0, 80)}), against its retry policy's bound ` +
          '(workflows/activity-options.ts).'
        : ''),
  );
  const cutNotes = result.options.kinds
    .filter((k) => CUT[k])
    .map((k) => `${k}: ${CUT[k]}`)
    .join('; ');
  const skippedNotes = result.skipped.map((x) => `${x.kind}: ${x.reason}`);
  const model = Object.entries(result.modelServers)
    .map(([name, st]) => `${name}: ${st.total} requests, faults ${JSON.stringify(st.faults)}`)
    .join('; ');
  lines.push(
    '',
    `> Work cut off = ${cutNotes}. Recovered = from the injection until ${result.options.kinds.map((k) => `${k}: ${RECOVERY[k]}`).join('; ')}. ` +
      (skippedNotes.length ? `Skipped: ${skippedNotes.join('; ')}. ` : '') +
      trainerNote(result) +
      evaluationNote(result) +
      `Model faults (e): ${Math.round(result.options.modelFaults.probability * 100)}% of requests (${result.options.modelFaults.kinds.join(', ')}); ${model}.`,
  );
  return lines.join('\n');
}

/** What the trainer was: one process, or a torchrun group (and what (b) kills then). */
function trainerNote(result: ChaosResult): string {
  const trainer = result.trainer;
  if (!trainer || trainer.ranks <= 1) return 'The trainer: one process on the CPU. ';
  const unexplained = trainer.groupRestartsUnexplained ?? [];
  return (
    `The trainer: a torchrun group of ${trainer.ranks} CPU ranks (gloo, FSDP2; rank 0 the Temporal worker), ` +
    `torchrun --max-restarts above any run's rank kills; (b) kills torchrun with every rank (a node failure) and ` +
    `a new torchrun is started; the replay audit replays the recorded steps in a group of the same size. ` +
    `Torchrun restarted the group ${trainer.groupRestarts ?? 0} times` +
    (unexplained.length
      ? `, ${unexplained.length} with no rank kill just before (at ${unexplained.map((u) => `${u.atS} s`).join(', ')}). `
      : '. ')
  );
}

/** The Evaluation runs' model calls: a trial cut by a kill runs again from its start. */
function evaluationNote(result: ChaosResult): string {
  const e = result.evaluation;
  if (!e) return '';
  const w = result.options.workload;
  return (
    `Evaluation runs: ${w.evaluationBfclTasks} BFCL multi_turn_base and ${w.evaluationTau2Tasks} tau2 airline trials each, ` +
    `2 at a time, through the benchmarks' official code against a ground-truth replay server (no faults (e): a broken ` +
    `answer would change the score) answering in ${w.evaluationLatencyMs} ms; every trial must score full reward. ` +
    `It answered ${e.calls} calls. Of the trials the kills cut (work cut off), ${e.trialsCut} had asked the model ` +
    `already; their new attempts ran them from the start and asked those ${e.callsAskedAgain} calls again (the ` +
    'evaluation worker keeps no ledger: the official code calls the model itself, so a cut trial pays its calls ' +
    'again; a stored trial is never run again). '
  );
}
