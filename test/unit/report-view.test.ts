import { describe, expect, it } from 'vitest';
import { renderReport } from '../../cli/report-view.js';

const report = {
  runId: 'synthesis-demo-1',
  kind: 'Synthesis',
  status: 'completed',
  summary: { kept: 3 },
  usage: [],
};

describe('mockworld report on a run the embedded toy model played in', () => {
  it('opens with a toy label naming the roles the embedded model answered', () => {
    const lines = renderReport({ ...report, toyRoles: ['judge', 'teacher'] }).split('\n');
    expect(lines[0]).toBe('Synthesis run synthesis-demo-1: completed');
    expect(lines[2]).toMatch(/^Toy figures: the embedded SmolLM2-135M \(toy\) answered as judge, teacher; /);
    expect(lines[2]).toContain('MOCKWORLD_MODEL_URL');
  });

  it('says nothing of toys when no role was answered by the embedded model', () => {
    expect(renderReport({ ...report, toyRoles: [] })).not.toContain('Toy figures');
    expect(renderReport(report)).not.toContain('Toy figures');
  });
});
