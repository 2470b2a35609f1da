import { describe, expect, it } from 'vitest';
import {
  CHECK_OPENING,
  choosePersona,
  choosePersonaIndex,
  composeRepairTrace,
  extractFinalAnswer,
  FIX_OPENING,
  personaMessages,
  personaSystemMessage,
  ProtocolInputError,
} from '../../../activities/study/protocols/index.js';
import { RepairOutputSchema } from '../../../schemas/trace-repair.js';

describe('trace repair', () => {
  const wrong = '1/6 + 1/6 = 2/12 = 1/6, so \\boxed{A}.';
  const repair = {
    check: 'Adding the denominators is wrong.',
    fixed_solution: '1/6 + 1/6 = 2/6 = 1/3, so \\boxed{B}.',
  };

  it('validates the teacher’s {check, fixed_solution} answer', () => {
    expect(RepairOutputSchema.parse(repair)).toEqual(repair);
    expect(RepairOutputSchema.safeParse({ check: ' ', fixed_solution: 'x' }).success).toBe(false);
    expect(RepairOutputSchema.safeParse({ check: 'x' }).success).toBe(false);
    expect(RepairOutputSchema.safeParse({ ...repair, note: 'extra' }).success).toBe(false);
  });

  it('composes the wrong → check → fix trace, whose final answer is the fixed one', () => {
    const trace = composeRepairTrace('wrong_check_fix', `${wrong}\n`, repair);
    expect(trace).toBe([wrong, CHECK_OPENING, repair.check, FIX_OPENING, repair.fixed_solution].join('\n\n'));
    expect(extractFinalAnswer(trace)?.text).toBe('B');
  });

  it('keeps only the corrected solution in the revised-only variant', () => {
    expect(
      composeRepairTrace('revised_only', wrong, {
        ...repair,
        fixed_solution: `  ${repair.fixed_solution}\n`,
      }),
    ).toBe(repair.fixed_solution);
  });
});

describe('persona choice', () => {
  const personas = Array.from({ length: 10 }, (_, i) => ({ id: `p${i}`, persona: `Persona number ${i}` }));

  it('is a deterministic function of question, attempt and seed', () => {
    const a = choosePersona(personas, 'q-1', 3, 42);
    expect(choosePersona(personas, 'q-1', 3, 42)).toBe(a);
    expect(choosePersonaIndex(10, 'q-1', 3, 42)).toBe(personas.indexOf(a));
    const varied = new Set(
      Array.from({ length: 20 }, (_, attempt) => choosePersona(personas, 'q-1', attempt, 42).id),
    );
    expect(varied.size).toBeGreaterThan(3);
    const seeds = new Set(Array.from({ length: 20 }, (_, seed) => choosePersonaIndex(10, 'q-1', 0, seed)));
    expect(seeds.size).toBeGreaterThan(3);
  });

  it('spreads choices roughly uniformly over the list', () => {
    const counts = new Array<number>(10).fill(0);
    for (let q = 0; q < 200; q += 1) {
      for (let attempt = 0; attempt < 10; attempt += 1)
        counts[choosePersonaIndex(10, `q-${q}`, attempt, 1)]! += 1;
    }
    // 2000 draws, 200 expected per persona; a 5-sigma band is about ±67.
    for (const count of counts) expect(Math.abs(count - 200)).toBeLessThan(70);
  });

  it('works on a list of plain strings and refuses an empty list or a bad attempt', () => {
    expect(['only one']).toContain(choosePersona(['only one'], 'q', 0, 0));
    expect(() => choosePersona([], 'q', 0, 0)).toThrow(ProtocolInputError);
    expect(() => choosePersonaIndex(3, 'q', -1, 0)).toThrow(ProtocolInputError);
    expect(() => choosePersonaIndex(3, 'q', 0, 0.5)).toThrow(ProtocolInputError);
  });

  it('puts the persona in a system message before the teacher’s question prompt', () => {
    const system = personaSystemMessage('  A retired sea captain who loves puzzles.  ');
    expect(system).toContain('Persona: A retired sea captain who loves puzzles.');
    expect(personaMessages('A chemist.', 'What is 2+2?')).toEqual([
      { role: 'system', content: personaSystemMessage('A chemist.') },
      { role: 'user', content: 'What is 2+2?' },
    ]);
  });
});
