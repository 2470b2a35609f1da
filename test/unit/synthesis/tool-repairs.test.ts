import { describe, expect, it } from 'vitest';
import { checkToolset, repairToolset } from '../../../activities/synthesis/tool-validation.js';

const tool = (name: string, description = `does ${name}`, properties: Record<string, unknown> = {}) => ({
  type: 'function',
  function: { name, description, parameters: { type: 'object', properties, required: [] } },
});

describe('duplicate tool names', () => {
  it('drops exact copies (key order aside) and records each drop', () => {
    const copy = {
      function: {
        parameters: { required: [], properties: {}, type: 'object' },
        description: 'does a',
        name: 'a',
      },
      type: 'function',
    };
    const { tools, repairs } = repairToolset([tool('a'), tool('b'), copy, tool('a')]);
    expect(tools).toEqual([tool('a'), tool('b')]);
    expect(repairs).toEqual([
      { action: 'dropped_copy', index: 2, name: 'a' },
      { action: 'dropped_copy', index: 3, name: 'a' },
    ]);
    expect(checkToolset(tools).ok).toBe(true);
  });

  it('renames a different tool under a taken name to the first free suffix, deterministically', () => {
    const input = [
      tool('find', 'find a user'),
      tool('find', 'find an order'),
      tool('find_2'),
      tool('find', 'find a ticket'),
    ];
    const first = repairToolset(input);
    expect(first.tools.map((t) => (t as ReturnType<typeof tool>).function.name)).toEqual([
      'find',
      'find_3',
      'find_2',
      'find_4',
    ]);
    expect(first.repairs).toEqual([
      { action: 'renamed', index: 1, name: 'find', to: 'find_3' },
      { action: 'renamed', index: 3, name: 'find', to: 'find_4' },
    ]);
    // Only the name changes: the tool's description and parameters are its own.
    expect((first.tools[1] as ReturnType<typeof tool>).function.description).toBe('find an order');
    expect(repairToolset(input)).toEqual(first);
    expect(checkToolset(first.tools).ok).toBe(true);
  });

  it('keeps a renamed tool within 64 characters', () => {
    const long = 'x'.repeat(64);
    const { tools } = repairToolset([tool(long, 'one'), tool(long, 'two')]);
    const renamed = (tools[1] as ReturnType<typeof tool>).function.name;
    expect(renamed).toBe(`${'x'.repeat(62)}_2`);
    expect(checkToolset(tools).ok).toBe(true);
  });

  it('leaves tools without a name, and sets without duplicates, to the check', () => {
    const input = [tool('a'), { type: 'function', function: { description: 'nameless' } }, tool('b')];
    expect(repairToolset(input)).toEqual({ tools: input, repairs: [] });
    expect(checkToolset(input).ok).toBe(false);
  });

  it('lists a repeated required parameter once and declares an undeclared one, recording both', () => {
    const repeated = tool('lookup', 'find', { id: { type: 'string' } });
    repeated.function.parameters.required = ['id', 'id', 'ghost'] as never;
    const { tools, repairs } = repairToolset([repeated]);
    const parameters = (tools[0] as ReturnType<typeof tool>).function.parameters;
    expect(parameters.required).toEqual(['id', 'ghost']);
    expect(parameters.properties).toEqual({ id: { type: 'string' }, ghost: {} });
    expect(repairs).toEqual([
      { action: 'deduped_required', index: 0, name: 'lookup', parameters: ['id'] },
      { action: 'declared_required', index: 0, name: 'lookup', parameters: ['ghost'] },
    ]);
    expect(checkToolset([repeated]).ok).toBe(false);
    expect(checkToolset(tools).ok).toBe(true);
  });
});
