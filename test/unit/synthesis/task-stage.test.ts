/**
 * A task workflow runs three activities (activities/synthesis/task-steps.ts and runDemonstrations)
 * and knows only which one runs; its row knows the last stage finished. Together they name the
 * stage the task is in, for `status --task` and for `failed_stage` (issue 19).
 */
import { describe, expect, it } from 'vitest';
import { currentStage, STAGE_GROUPS } from '../../../activities/synthesis/task-stage.js';
import { TaskStageSchema } from '../../../schemas/synthesis-records.js';

describe('currentStage', () => {
  it('names the stage after the last one finished, within the running activity', () => {
    expect(currentStage('toolset', null)).toBe('toolset');
    expect(currentStage('toolset', 'pending')).toBe('toolset');
    expect(currentStage('toolset', 'toolset')).toBe('refine');
    expect(currentStage('toolset', 'refine')).toBe('instruction');
    expect(currentStage('toolset', 'instruction')).toBe('instruction'); // done, not yet seen by the workflow
    expect(currentStage('demonstrations', 'instruction')).toBe('demonstrations');
    expect(currentStage('rubric', 'instruction')).toBe('rubric');
    expect(currentStage('rubric', 'rubric')).toBe('store');
  });

  it('leaves stages outside the activities as they are', () => {
    for (const stage of ['pending', 'started', 'kept', 'rejected'] as const)
      expect(currentStage(stage, 'toolset')).toBe(stage);
  });

  it('covers every middle stage of the lifecycle exactly once, in order', () => {
    const middle = TaskStageSchema.options.filter(
      (s) => !['pending', 'started', 'kept', 'rejected', 'failed'].includes(s),
    );
    expect(STAGE_GROUPS.flat()).toEqual(middle);
  });
});
