import {
  condition,
  makeContinueAsNewFunc,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  type Workflow,
} from '@temporalio/workflow';
import type { RunActivities } from '../activities/runs.js';
import type { RunStarted } from '../schemas/run-records.js';
import type { RunState, RunStatus } from '../schemas/run-status.js';
import { SHORT_ACTIVITY } from './activity-options.js';
import { budgetSignal, pauseSignal, resumeSignal, statusQuery } from './controls.js';
import { MockworldKind, MockworldProgress, MockworldState } from './search-attributes.js';

/** Memo key of the run's page in the results viewer (kept across continue-as-new by continueRun). */
export const VIEWER_MEMO = 'mockworldViewer';
/** Memo key of the run's budget in USD: the spec's, or the last one the `budget` signal set. */
export const BUDGET_MEMO = 'mockworldBudgetUsd';

const { runSpend, recordRunPause } = proxyActivities<RunActivities>(SHORT_ACTIVITY);

/**
 * Keeps the run's viewer page, as the run-start activity answered it, in the workflow's memo, so
 * every later run of the chain (continue-as-new) links it too. Histories from before the answer
 * carried it hold no page: nothing is upserted, so they replay unchanged.
 */
export function linkViewer(started: RunStarted | void | undefined): void {
  const url = started?.viewerUrl;
  if (url && workflowInfo().memo?.[VIEWER_MEMO] !== url) upsertMemo({ [VIEWER_MEMO]: url });
  // The spec's budget, once: a budget raised by the signal (in the memo already) wins.
  if (started?.budgetUsd !== undefined && workflowInfo().memo?.[BUDGET_MEMO] === undefined)
    upsertMemo({ [BUDGET_MEMO]: started.budgetUsd });
}

const money = (usd: number) => `$${usd < 1 ? usd.toPrecision(3) : usd.toFixed(2)}`;

/**
 * `continueAsNew` that keeps the run's memo (the server starts the next run with none): the
 * viewer link stays in the Temporal UI for the whole chain.
 */
export function continueRun<F extends Workflow>(...args: Parameters<F>): Promise<never> {
  return makeContinueAsNewFunc<F>({ memo: workflowInfo().memo ?? {} })(...args);
}

/**
 * The controls every pipeline shares: pause/resume signals, the status query and the search
 * attributes the UI filters on. Pipelines call `untilResumed()` at their safe points. The run's
 * current details (Temporal UI, "Current Details") say its state and stage and link its page in
 * the viewer; they are workflow metadata, not history, so updating them costs nothing.
 */
export class RunControl {
  private paused = false;
  /**
   * Set while the run paused itself: why, and whether resuming checks the cause again first (a
   * budget is compared again; a judge found unreliable was seen by whoever resumed).
   */
  private selfPause: { reason: string; recheck: boolean } | undefined;
  /** Standing warnings shown in the Temporal UI's details by key (e.g. a judge that failed its controls). */
  private warnings = new Map<string, string>();
  private status: RunStatus;

  constructor(kind: string, total: number) {
    this.status = { kind, state: 'running', done: 0, total, stage: 'starting', counts: {} };
    setHandler(pauseSignal, () => this.pause(), { description: pauseSignal.description });
    setHandler(resumeSignal, () => this.resumeRun(), { description: resumeSignal.description });
    setHandler(
      budgetSignal,
      (usd) => {
        if (!(typeof usd === 'number' && Number.isFinite(usd) && usd > 0)) return; // ignored, not a failure
        upsertMemo({ [BUDGET_MEMO]: usd });
        // Resume to check again at the safe point: still over it, the run pauses again, saying so.
        if (this.selfPause?.recheck) this.resumeRun();
      },
      { description: budgetSignal.description },
    );
    setHandler(statusQuery, () => this.status, { description: statusQuery.description });
    upsertSearchAttributes([
      { key: MockworldKind, value: kind },
      { key: MockworldState, value: 'running' },
      { key: MockworldProgress, value: 0 },
    ]);
    this.showDetails();
  }

  /** Puts the run in pause (the `pause` signal; also a pause carried over continue-as-new). */
  pause(): void {
    this.paused = true;
    this.setState('paused');
  }

  private resumeRun(): void {
    this.paused = false;
    this.setState('running');
  }

  /**
   * Waits while paused; returns at once otherwise. Call only between units of work. With a
   * budget, it first compares what the run spent (the ledger) with it: reached, the run pauses
   * itself as the `pause` signal would, records why, and waits for a higher budget or `resume`.
   */
  async untilResumed(): Promise<void> {
    for (;;) {
      const budget = workflowInfo().memo?.[BUDGET_MEMO];
      if (typeof budget === 'number' && !this.paused) {
        const runId = workflowInfo().workflowId;
        const { costUsd } = await runSpend({ runId });
        if (costUsd >= budget) {
          await this.pauseFor(
            `budget reached: spent ${money(costUsd)} of ${money(budget)}; raise it with ` +
              `\`mockworld budget ${runId} <usd>\` (or the 'budget' signal), then it resumes`,
            true,
          );
        }
      }
      if (!this.paused) return;
      await condition(() => !this.paused);
      if (this.selfPause !== undefined) {
        const { recheck } = this.selfPause;
        this.selfPause = undefined;
        await recordRunPause({ runId: workflowInfo().workflowId, reason: null });
        if (recheck) continue; // check the (new) budget again before any work
      }
      return;
    }
  }

  /**
   * Pauses the run itself, as the \`pause\` signal would, and records why (the stage, the Temporal
   * UI's details, \`mockworld status\`); it holds at its next safe point until resumed. With
   * \`recheck\`, resuming checks the budget again first.
   */
  async pauseFor(reason: string, recheck = false): Promise<void> {
    this.selfPause = { reason, recheck };
    this.status = { ...this.status, stage: reason };
    this.pause();
    await recordRunPause({ runId: workflowInfo().workflowId, reason });
  }

  /**
   * Sets the standing warning under `key` in the run's details in the Temporal UI, replacing the
   * last one of that key; undefined clears it.
   */
  warn(key: string, text: string | undefined): void {
    if (this.warnings.get(key) === text) return;
    if (text === undefined) this.warnings.delete(key);
    else this.warnings.set(key, text);
    this.showDetails();
  }

  /** True while a pause is in effect. */
  get isPaused(): boolean {
    return this.paused;
  }

  /** Sets the units of work planned once they are known (an Evaluation lists its tasks first). */
  setTotal(total: number): void {
    this.status = { ...this.status, total };
  }

  /** Records progress; the search attribute is updated only when the rounded fraction moves. */
  progress(done: number, stage: string, counts?: Record<string, number>): void {
    const before = this.fraction();
    // While the run holds for a reason of its own, that reason stays its stage.
    const held = this.paused && this.selfPause !== undefined;
    this.status = {
      ...this.status,
      done,
      stage: held ? this.selfPause!.reason : stage,
      counts: counts ?? this.status.counts,
    };
    const after = this.fraction();
    if (after !== before) upsertSearchAttributes([{ key: MockworldProgress, value: after }]);
    this.showDetails();
  }

  /** Sets the coarse state (search attribute and query). */
  setState(state: RunState): void {
    if (this.status.state === state) return;
    this.status = { ...this.status, state };
    upsertSearchAttributes([{ key: MockworldState, value: state }]);
    this.showDetails();
  }

  /** Markdown the Temporal UI shows: state, progress, stage, and the way to the run's data. */
  showDetails(): void {
    const { kind, state, done, total, stage } = this.status;
    const url = workflowInfo().memo?.[VIEWER_MEMO];
    const lines = [`**${kind}** · ${state} · ${total ? `${done}/${total}` : done} · ${stage}`];
    if (this.selfPause !== undefined && this.paused) lines.push('', `Paused: ${this.selfPause.reason}`);
    for (const warning of this.warnings.values()) lines.push('', `⚠ ${warning}`);
    if (typeof url === 'string') lines.push('', `[Open this run in the mockworld viewer](${url})`);
    setCurrentDetails(lines.join('\n'));
  }

  private fraction(): number {
    return this.status.total ? Math.round((100 * this.status.done) / this.status.total) / 100 : 0;
  }
}
