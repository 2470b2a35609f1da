import {
  ParentClosePolicy,
  condition,
  getExternalWorkflowHandle,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { RunActivities } from '../activities/runs.js';
import {
  DEFAULT_TRIAL_TIMEOUT_MINUTES,
  type EvalEndpoint,
  type EvaluationBenchmark,
  type EvaluationMetrics,
} from '../schemas/evaluation-contract.js';
import type { EvaluationSpec } from '../schemas/evaluation-spec.js';
import { SHORT_ACTIVITY } from './activity-options.js';
import { pauseSignal, resumeSignal } from './controls.js';
import { evalActivities, listGroupTasks } from './evaluation-activities.js';
import {
  groupPauseSignal,
  groupProgressSignal,
  groupsQuery,
  type GroupStatus,
} from './evaluation-controls.js';
import {
  EvaluationGroup,
  type EvaluationGroupInput,
  type EvaluationGroupResult,
} from './evaluation-group.js';
import { linkViewer, RunControl } from './run-control.js';
import { endRunOnError } from './run-end.js';
import { validateSpec } from './spec-guard.js';
import type { JudgeStanding } from '../schemas/judge-controls.js';
import { evaluationJudgeStanding } from './evaluation-judge.js';

const { recordRunStart, recordRunFinish } = proxyActivities<RunActivities>(SHORT_ACTIVITY);

/** What an Evaluation run returns and stores as its summary (`mockworld report` prints it). */
export interface EvaluationSummary {
  readonly name: string;
  readonly policy: EvalEndpoint;
  readonly groups: EvaluationGroupResult[];
  readonly metrics: EvaluationMetrics;
  /** The rubric and answer judges by their controls (absent without either, and before controls). */
  readonly judge?: JudgeStanding;
}

/** The endpoint the policy is served at: as given, or a training run's step on a policy server. */
export function policyEndpoint(policy: EvaluationSpec['policy']): EvalEndpoint {
  if ('endpoint' in policy) {
    const { baseUrl, model, apiKeyEnv } = policy.endpoint;
    return { baseUrl, model, ...(apiKeyEnv ? { apiKeyEnv } : {}) };
  }
  const { runId, step, server } = policy.checkpoint;
  return {
    baseUrl: server.baseUrl,
    model: `${runId}@${step}`,
    ...(server.apiKeyEnv ? { apiKeyEnv: server.apiKeyEnv } : {}),
  };
}

/** The groups of a spec, in run order, each with the settings its trials share. */
export function planGroups(spec: EvaluationSpec, evaluationId: string): PlannedGroup[] {
  const policy = policyEndpoint(spec.policy);
  const common = { evaluationId, concurrency: spec.concurrency, taskQueue: spec.evalTaskQueue };
  // A spec parsed before the bound existed (a continued training run's benchmarks) has none.
  const wallSeconds = Math.round((spec.trialTimeoutMinutes ?? DEFAULT_TRIAL_TIMEOUT_MINUTES) * 60);
  return [
    ...bfclGroups(spec, common, policy),
    ...tau2Groups(spec, common, policy),
    ...syntheticGroups(spec, common, policy),
    ...reasoningGroups(spec, common, policy),
    ...localGroups(spec, { ...common, trial: { policy, sampling: spec.sampling } }),
  ].map((group) => ({ ...group, trial: { ...group.trial, wallSeconds } }));
}

/** A planned group: its child's input, less the pause it starts in. */
type PlannedGroup = Omit<EvaluationGroupInput, 'paused'>;

/** What every group of an Evaluation shares. */
type CommonGroupFields = Pick<PlannedGroup, 'evaluationId' | 'concurrency' | 'taskQueue'>;

/** One group per BFCL category. */
function bfclGroups(spec: EvaluationSpec, common: CommonGroupFields, policy: EvalEndpoint): PlannedGroup[] {
  const { bfcl } = spec.benchmarks;
  if (!bfcl) return [];
  return bfcl.categories.map((category) => ({
    ...common,
    benchmark: 'bfcl',
    group: category,
    ...(bfcl.taskIds ? { taskIds: bfcl.taskIds } : {}),
    ...(bfcl.limit ? { limit: bfcl.limit } : {}),
    trials: bfcl.trials,
    trial: { policy, sampling: spec.sampling },
  }));
}

/** One group per tau2 domain, with its user simulator. */
function tau2Groups(spec: EvaluationSpec, common: CommonGroupFields, policy: EvalEndpoint): PlannedGroup[] {
  const { tau2 } = spec.benchmarks;
  if (!tau2) return [];
  const { endpoint, sampling } = tau2.userSimulator;
  const user: EvalEndpoint = {
    baseUrl: endpoint.baseUrl,
    model: endpoint.model,
    ...(endpoint.apiKeyEnv ? { apiKeyEnv: endpoint.apiKeyEnv } : {}),
  };
  return tau2.domains.map((domain) => ({
    ...common,
    benchmark: 'tau2',
    group: domain,
    split: tau2.split,
    ...(tau2.taskIds ? { taskIds: tau2.taskIds } : {}),
    ...(tau2.limit ? { limit: tau2.limit } : {}),
    trials: tau2.trials,
    trial: {
      policy,
      sampling: spec.sampling,
      user,
      userSampling: sampling,
      split: tau2.split,
      maxSteps: tau2.maxSteps,
      maxErrors: tau2.maxErrors,
      seed: tau2.seed,
    },
  }));
}

/** The held-out synthetic tasks, as one group. */
function syntheticGroups(
  spec: EvaluationSpec,
  common: CommonGroupFields,
  policy: EvalEndpoint,
): PlannedGroup[] {
  const synthetic = spec.benchmarks.synthetic;
  if (!synthetic) return [];
  // judgeControls is the run's business (evaluation judge standing), not a trial's.
  const { trials, taskIds, limit, judgeControls: _run, ...settings } = synthetic;
  return [
    {
      ...common,
      benchmark: 'synthetic',
      group: 'held-out',
      ...(taskIds ? { taskIds } : {}),
      ...(limit ? { limit } : {}),
      trials,
      trial: { policy, sampling: spec.sampling },
      synthetic: settings,
    },
  ];
}

/** One group per dataset of the math and search benchmarks, in that order. */
function reasoningGroups(
  spec: EvaluationSpec,
  common: CommonGroupFields,
  policy: EvalEndpoint,
): PlannedGroup[] {
  const groups: PlannedGroup[] = [];
  const reasoning = [
    ['math', spec.benchmarks.math],
    ['search', spec.benchmarks.search],
  ] as const;
  for (const [benchmark, settings] of reasoning) {
    if (!settings) continue;
    const search = 'backend' in settings ? { search: settings.backend, judge: settings.judge } : {};
    for (const dataset of settings.datasets) {
      groups.push({
        ...common,
        benchmark,
        group: dataset.name,
        ...(settings.taskIds ? { taskIds: settings.taskIds } : {}),
        ...(settings.limit ? { limit: settings.limit } : {}),
        trials: settings.trials,
        trial: { policy, sampling: spec.sampling },
        reasoning: {
          path: dataset.path,
          maxTurns: settings.maxTurns,
          ...(settings.sandbox ? { sandbox: settings.sandbox } : {}),
          ...(settings.templates ? { templates: settings.templates } : {}),
          ...search,
        },
      });
    }
  }
  return groups;
}

/** The benchmarks an Evaluation spec names that are not registered file benchmarks. */
const BUILT_IN_BENCHMARKS: ReadonlySet<string> = new Set(['bfcl', 'tau2', 'synthetic', 'math', 'search']);

/**
 * The groups of the registered file benchmarks (schemas/local-benchmarks.ts): a group per data set.
 * Any other key of a validated spec's `benchmarks` is one, so this code names no family.
 */
function localGroups(
  spec: EvaluationSpec,
  common: Pick<EvaluationGroupInput, 'evaluationId' | 'concurrency' | 'taskQueue' | 'trial'>,
): Omit<EvaluationGroupInput, 'paused'>[] {
  return Object.entries(spec.benchmarks)
    .filter(([name, entry]) => !BUILT_IN_BENCHMARKS.has(name) && entry !== undefined)
    .flatMap(([name, entry]) => {
      const { datasets, trials, taskIds, limit, settings } = entry as LocalBenchmarkEntry;
      return datasets.map((dataset) => ({
        ...common,
        benchmark: name as EvaluationBenchmark,
        group: dataset.name,
        ...(taskIds ? { taskIds } : {}),
        ...(limit ? { limit } : {}),
        trials,
        local: { path: dataset.path, settings },
      }));
    });
}

/** What every registered file benchmark's spec entry holds (schemas/evaluation-spec.ts). */
interface LocalBenchmarkEntry {
  readonly datasets: ReadonlyArray<{ readonly name: string; readonly path: string }>;
  readonly trials: number;
  readonly taskIds?: string[];
  readonly limit?: number;
  readonly settings: unknown;
}

/**
 * An evaluation of one policy on tau2-bench and BFCL-V4 multi-turn through the official code: one
 * EvaluationGroup child per category or domain, one after another, each running its (task, trial)
 * activities `concurrency` at a time on the Python evaluation worker; then the metrics. Pause holds
 * new trials (running ones finish), resume continues, cancel stops the children and their trials.
 * Started again under the same id, every stored trial is returned as it is, never re-run.
 */
export async function Evaluation(input: unknown): Promise<EvaluationSummary> {
  const spec: EvaluationSpec = await validateSpec('Evaluation', input);
  const runId = workflowInfo().workflowId;
  const control = new RunControl('Evaluation', 0);
  const groups = planGroups(spec, runId);
  const statuses = pendingStatuses(groups);
  const run: EvaluationRunState = { paused: false, activeChild: undefined };
  handlePauseResume(control, run);
  const report = () => reportGroups(control, statuses);
  setHandler(groupsQuery, () => [...statuses.values()], { description: groupsQuery.description });
  setHandler(
    groupProgressSignal,
    (status) => {
      statuses.set(`${status.benchmark}/${status.group}`, status);
      report();
    },
    { description: groupProgressSignal.description },
  );

  linkViewer(await recordRunStart({ runId, kind: 'Evaluation', spec }));
  const results: EvaluationGroupResult[] = [];
  let metrics: EvaluationMetrics;
  const { summarize } = evalActivities(spec.evalTaskQueue);
  try {
    // The tasks first, so the run knows its total and a bad task id fails it before any trial.
    control.progress(0, 'listing tasks');
    await listTasks(groups, statuses);
    control.setTotal([...statuses.values()].reduce((n, s) => n + s.total, 0));
    report();
    for (const group of groups) {
      const result = await runGroup(runId, group, run);
      results.push(result);
      const key = `${group.benchmark}/${group.group}`;
      const last = statuses.get(key)!;
      statuses.set(key, { ...last, state: 'done', done: result.trials, total: result.trials });
      report();
    }
    control.progress(
      results.reduce((n, r) => n + r.trials, 0),
      'computing the metrics',
    );
    metrics = await summarize({
      evaluationId: runId,
      ...(spec.compareWith ? { compareWith: spec.compareWith } : {}),
      bootstrapSamples: spec.bootstrapSamples,
      confidence: spec.confidence,
    });
  } catch (error) {
    return endRunOnError(control, runId, error);
  }
  const judge = await evaluationJudgeStanding(spec, runId, control);
  const summary: EvaluationSummary = {
    name: spec.name,
    policy: policyEndpoint(spec.policy),
    groups: results,
    metrics,
    ...(judge ? { judge } : {}),
  };
  control.progress(metrics.trials, 'done');
  control.setState('completed');
  await recordRunFinish({ runId, state: 'completed', summary: { ...summary } });
  return summary;
}

/** What an Evaluation's pause and resume handlers share with its group loop. */
interface EvaluationRunState {
  paused: boolean;
  /** The workflow id of the group child running now, which pause and resume are forwarded to. */
  activeChild: string | undefined;
}

/** Registers the run's pause and resume (replacing RunControl's): each also reaches the running group child. */
function handlePauseResume(control: RunControl, run: EvaluationRunState): void {
  const setPaused = (paused: boolean) => async () => {
    run.paused = paused;
    control.setState(paused ? 'paused' : 'running');
    if (run.activeChild) await getExternalWorkflowHandle(run.activeChild).signal(groupPauseSignal, paused);
  };
  setHandler(pauseSignal, setPaused(true), { description: pauseSignal.description });
  setHandler(resumeSignal, setPaused(false), { description: resumeSignal.description });
}

/** Every group's status before it runs, keyed `benchmark/group`. */
function pendingStatuses(groups: readonly PlannedGroup[]): Map<string, GroupStatus> {
  return new Map<string, GroupStatus>(
    groups.map((g) => [
      `${g.benchmark}/${g.group}`,
      {
        benchmark: g.benchmark,
        group: g.group,
        state: 'pending',
        done: 0,
        total: 0,
        meanReward: null,
        modelErrors: 0,
      },
    ]),
  );
}

/** The run's progress from its groups' statuses: trials done, the running group, counts per group. */
function reportGroups(control: RunControl, statuses: Map<string, GroupStatus>): void {
  const all = [...statuses.values()];
  const counts: Record<string, number> = {};
  for (const s of all) {
    counts[`${s.benchmark}/${s.group} done`] = s.done;
    counts[`${s.benchmark}/${s.group} total`] = s.total;
  }
  const active = all.find((s) => s.state === 'running');
  control.progress(
    all.reduce((n, s) => n + s.done, 0),
    active ? `${active.benchmark} ${active.group}` : 'between groups',
    counts,
  );
}

/** Lists each group's tasks, in order: its total of trials, and its task ids in place of its limit. */
async function listTasks(groups: PlannedGroup[], statuses: Map<string, GroupStatus>): Promise<void> {
  for (const [index, group] of groups.entries()) {
    const listed = await listGroupTasks(group);
    const key = `${group.benchmark}/${group.group}`;
    statuses.set(key, { ...statuses.get(key)!, total: listed.taskIds.length * group.trials });
    const { limit: _limit, ...rest } = group;
    groups[index] = { ...rest, taskIds: listed.taskIds };
  }
}

/** Runs one group as an EvaluationGroup child once the run is not paused; pause and resume reach it meanwhile. */
async function runGroup(
  runId: string,
  group: PlannedGroup,
  run: EvaluationRunState,
): Promise<EvaluationGroupResult> {
  await condition(() => !run.paused);
  const childId = `${runId}/${group.benchmark}/${group.group}`;
  const child = await startChild(EvaluationGroup, {
    workflowId: childId,
    args: [{ ...group, paused: run.paused }],
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
  });
  run.activeChild = childId;
  const result = await child.result();
  run.activeChild = undefined;
  return result;
}
