import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { EvaluationBenchmark } from '../schemas/evaluation-contract.js';
import { described } from './described.js';

/** Where one benchmark group (a BFCL category, a tau2 domain) of an Evaluation run stands. */
export interface GroupStatus {
  readonly benchmark: EvaluationBenchmark;
  readonly group: string;
  /** pending, listing, running, done, failed */
  readonly state: string;
  readonly done: number;
  /** Trials of the group (tasks x trials), 0 until its tasks are listed. */
  readonly total: number;
  /** Mean reward of the trials done so far. */
  readonly meanReward: number | null;
  readonly modelErrors: number;
}

/** Each benchmark group of the run: state, trials done of total, mean reward so far. */
export const groupsQuery = described(
  defineQuery<GroupStatus[]>('groups'),
  'Each benchmark group (BFCL category, tau2 domain): state, trials done of total, mean reward so far.',
);

/** Each task of this group and its trials' results so far (reward, or pending / running). */
export const tasksQuery = described(
  defineQuery<Record<string, string[]>>('tasks'),
  'Each task of this group and the result of each of its trials so far: the reward, running or pending.',
);

/** Sent by an EvaluationGroup child to its Evaluation run after each trial. Not a user control. */
export const groupProgressSignal = described(
  defineSignal<[status: GroupStatus]>('mockworld.internal.evalGroupProgress'),
  'Internal: an EvaluationGroup child reports its progress to this run. Not a user control; do not send.',
);

/** Sent by an Evaluation run to its running group child when it is paused or resumed. Not a user control. */
export const groupPauseSignal = described(
  defineSignal<[paused: boolean]>('mockworld.internal.evalGroupPause'),
  'Internal: the Evaluation run pauses (true) or resumes (false) this group. Not a user control; send pause/resume to the run.',
);
