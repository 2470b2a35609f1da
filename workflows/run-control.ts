import { condition, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { RunState, RunStatus } from '../schemas/run-status.js';
import { pauseSignal, resumeSignal, statusQuery } from './controls.js';
import { MockworldKind, MockworldProgress, MockworldState } from './search-attributes.js';

/**
 * The controls every pipeline shares: pause/resume signals, the status query and the search
 * attributes the UI filters on. Pipelines call `untilResumed()` at their safe points.
 */
export class RunControl {
  private paused = false;
  private status: RunStatus;

  constructor(kind: string, total: number) {
    this.status = { kind, state: 'running', done: 0, total, stage: 'starting', counts: {} };
    setHandler(pauseSignal, () => this.pause(), { description: pauseSignal.description });
    setHandler(
      resumeSignal,
      () => {
        this.paused = false;
        this.setState('running');
      },
      { description: resumeSignal.description },
    );
    setHandler(statusQuery, () => this.status, { description: statusQuery.description });
    upsertSearchAttributes([
      { key: MockworldKind, value: kind },
      { key: MockworldState, value: 'running' },
      { key: MockworldProgress, value: 0 },
    ]);
  }

  /** Puts the run in pause (the `pause` signal; also a pause carried over continue-as-new). */
  pause(): void {
    this.paused = true;
    this.setState('paused');
  }

  /** Waits while paused; returns at once otherwise. Call only between units of work. */
  async untilResumed(): Promise<void> {
    if (this.paused) await condition(() => !this.paused);
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
    this.status = { ...this.status, done, stage, counts: counts ?? this.status.counts };
    const after = this.fraction();
    if (after !== before) upsertSearchAttributes([{ key: MockworldProgress, value: after }]);
  }

  /** Sets the coarse state (search attribute and query). */
  setState(state: RunState): void {
    if (this.status.state === state) return;
    this.status = { ...this.status, state };
    upsertSearchAttributes([{ key: MockworldState, value: state }]);
  }

  private fraction(): number {
    return this.status.total ? Math.round((100 * this.status.done) / this.status.total) / 100 : 0;
  }
}
