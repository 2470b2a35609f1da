import { describe, expect, it } from 'vitest';
import { runHeader } from '../../../services/viewer/runs-page.js';

const ui = { url: 'http://localhost:8233', namespace: 'default' };
const run = { runId: 'synthesis-demo-1', kind: 'Synthesis', state: 'completed' };

describe("a run page's header", () => {
  it('labels the figures of a run the embedded toy model played in, naming its roles', async () => {
    const text = String(await runHeader({ ...run, toyRoles: ['judge', 'teacher'] }, ui));
    expect(text).toMatch(
      /<p class="warning" role="alert">Toy figures: the embedded SmolLM2-135M \(toy\) answered as judge, teacher;/,
    );
  });

  it('has no label when no role was answered by the embedded model', async () => {
    expect(String(await runHeader({ ...run, toyRoles: [] }, ui))).not.toContain('Toy figures');
    expect(String(await runHeader(run, ui))).not.toContain('Toy figures');
  });
});
