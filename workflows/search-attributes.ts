import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Spec kind of a run (Smoke, Synthesis, GrpoTraining, ScalingStudy): the UI's first filter. */
export const MockworldKind = defineSearchAttributeKey('MockworldKind', SearchAttributeType.KEYWORD);
/** Coarse state of a run: running, paused, completed, failed, cancelled. */
export const MockworldState = defineSearchAttributeKey('MockworldState', SearchAttributeType.KEYWORD);
/** Fraction of the run's planned work that is done, 0..1. */
export const MockworldProgress = defineSearchAttributeKey('MockworldProgress', SearchAttributeType.DOUBLE);

/** Every search attribute the workflows set; the stack registers exactly these. */
export const MOCKWORLD_SEARCH_ATTRIBUTES = [MockworldKind, MockworldState, MockworldProgress] as const;
