import { describe, expect, it } from 'vitest';
import { parseSpec } from '../../schemas/specs.js';
import { SpecValidationError } from '../../schemas/spec-error.js';

/** Which roles may go in batch jobs is decided at start, with every refused field named. */
describe('batch mode in specs', () => {
  const personas = { path: 'personas.jsonl' };

  it('accepts batch on the synthesis teacher, rubric extractor and coverage judge, with the window defaults', () => {
    const spec = parseSpec({
      kind: 'Synthesis',
      personas,
      tasks: 1,
      models: {
        teacher: { mode: 'batch' },
        rubricExtractor: { mode: 'batch', batch: { maxWaitSeconds: 5 } },
      },
    });
    if (spec.kind !== 'Synthesis') throw new Error('not a synthesis spec');
    expect(spec.models.teacher).toMatchObject({
      mode: 'batch',
      batch: { maxRequests: 1000, priceFactor: 0.5 },
    });
    expect(spec.models.rubricExtractor).toMatchObject({
      mode: 'batch',
      batch: { maxWaitSeconds: 5, pollSeconds: 30 },
    });
    // The coverage judge inherits the extractor's role, batch settings included.
    expect(spec.models.coverageJudge).toEqual(spec.models.rubricExtractor);
  });

  it('refuses batch on roles that answer within a turn or a step, naming each field', () => {
    const refused = (document: Record<string, unknown>) => {
      try {
        parseSpec(document);
      } catch (error) {
        if (error instanceof SpecValidationError) return error.issues.map((i) => i.path);
        throw error;
      }
      throw new Error('the spec was accepted');
    };
    expect(
      refused({
        kind: 'Synthesis',
        personas,
        tasks: 1,
        models: { toolSimulator: { mode: 'batch' }, userSimulator: { mode: 'batch' } },
      }),
    ).toEqual(['models.toolSimulator.mode', 'models.userSimulator.mode']);
    expect(() => parseSpec({ kind: 'Smoke', model: { mode: 'batch' } })).toThrow(
      /model\.mode: this role answers within a turn or a training step.*batch mode is for roles whose answers can wait/,
    );
  });

  it('refuses a window out of its bounds', () => {
    expect(() =>
      parseSpec({
        kind: 'Synthesis',
        personas,
        tasks: 1,
        models: { rubricExtractor: { mode: 'batch', batch: { maxRequests: 60_000 } } },
      }),
    ).toThrow(/models\.rubricExtractor\.batch\.maxRequests/);
  });
});
