import { describe, expect, it } from 'vitest';
import { featuresOf } from '../../activities/export/dataset-card.js';
import { HF_LAYOUT, VERL_LAYOUT } from '../../activities/export/parquet.js';
import { ExportFormatListSchema } from '../../schemas/export-formats.js';

describe('export formats', () => {
  it('parses --format lists: commas, all, duplicates; refuses unknown names', () => {
    expect(ExportFormatListSchema.parse('jsonl')).toEqual(['jsonl']);
    expect(ExportFormatListSchema.parse(' hf , sft,hf')).toEqual(['hf', 'sft']);
    expect(ExportFormatListSchema.parse('all')).toEqual(['jsonl', 'verl-parquet', 'hf', 'sft']);
    expect(ExportFormatListSchema.safeParse('parquet').success).toBe(false);
    expect(ExportFormatListSchema.safeParse(',').success).toBe(false);
  });

  it("describes the layouts' columns as datasets features (the dataset card's schema)", () => {
    expect(featuresOf(VERL_LAYOUT).map((f) => f.name)).toEqual([
      'data_source',
      'prompt',
      'ability',
      'reward_model',
      'extra_info',
      'agent_name',
    ]);
    const hf = Object.fromEntries(featuresOf(HF_LAYOUT).map((f) => [f.name, f]));
    expect(hf.prompt).toEqual({
      name: 'prompt',
      list: [
        { name: 'role', dtype: 'string' },
        { name: 'content', dtype: 'string' },
      ],
    });
    expect(hf.rubric).toEqual({
      name: 'rubric',
      struct: [
        { name: 'forbidden', list: 'string' },
        { name: 'subGoals', list: 'string' },
        { name: 'requiredInteractions', list: 'string' },
      ],
    });
    expect(hf.workflow).toEqual({ name: 'workflow', list: 'string' });
    expect(hf.tools).toEqual({ name: 'tools', dtype: 'string' });
  });
});
