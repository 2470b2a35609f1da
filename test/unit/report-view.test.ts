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

  it("puts the judge's standing first: a standing object, or a study's own line", () => {
    const standing = {
      controlPassRate: 0.5,
      minPassRate: 0.9,
      unreliable: true,
      reason: 'judge unreliable: it graded 1 of 2',
    };
    expect(renderReport({ ...report, summary: { judge: standing } }).split('\n')[2]).toBe(
      '⚠ judge unreliable: it graded 1 of 2',
    );
    const study = {
      ...report,
      kind: 'ScalingStudy',
      summary: { judge: 'UNRELIABLE: 6 of 12 controls passed (50%; threshold 90%)' },
    };
    expect(renderReport(study).split('\n')[2]).toBe(
      '⚠ judge UNRELIABLE: 6 of 12 controls passed (50%; threshold 90%)',
    );
    expect(
      renderReport({ ...study, summary: { judge: 'ok: 12 of 12 controls passed' } }).split('\n')[2],
    ).toBe('judge ok: 12 of 12 controls passed');
    expect(renderReport({ ...report, summary: { judge: 7 } })).not.toContain('NaN');
  });
});
