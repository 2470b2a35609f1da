import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toGrammarSchema } from '../../../services/embedded-model/json-schema-grammar.js';
import { MAX_GRAMMAR_REPETITION, patternToGbnf } from '../../../services/embedded-model/regex-grammar.js';
import { createSchemaGrammar } from '../../../services/embedded-model/schema-grammar.js';
import { jsonSchemaResponseFormat } from '../../../activities/llm/structured-output.js';
import { coverageSchema } from '../../../schemas/coverage-judge.js';
import { judgementSchema } from '../../../schemas/rubric-judge.js';
import {
  refinedToolsetSchema,
  rubricDraftSchema,
  toolsetDraftSchema,
} from '../../../schemas/synthesis-records.js';
import { DEFAULT_TASK_SIZE } from '../../../schemas/synthesis-spec.js';

/**
 * Compiles a JSON Schema the way the embedded server does and returns whether a value's JSON text
 * is a complete match of the grammar (node-llama-cpp's grammars end with four newlines).
 */
async function compile(llama: Llama, schema: unknown) {
  const grammar = await createSchemaGrammar(llama, toGrammarSchema(schema));
  const test = grammar as unknown as { _testText(text: string): boolean };
  return (value: unknown) => test._testText(`${JSON.stringify(value)}\n\n\n\n`);
}

const stringWith = (keywords: Record<string, unknown>) => ({
  type: 'object',
  properties: { s: { type: 'string', ...keywords } },
});

describe('grammar constructs beyond node-llama-cpp JSON schemas', () => {
  let llama: Llama;
  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  });

  it('constrains a tool name to the function-calling pattern', async () => {
    const accepts = await compile(llama, stringWith({ pattern: '^[A-Za-z0-9_-]{1,64}$', maxLength: 64 }));
    for (const ok of ['get_weather', 'a', 'A-9_z', 'x'.repeat(64)]) expect(accepts({ s: ok })).toBe(true);
    for (const bad of ['get weather', '', 'x'.repeat(65), 'naïve', 'a.b', 'a"b'])
      expect(accepts({ s: bad }), bad).toBe(false);
  });

  it('searches an unanchored pattern anywhere in the string, as JSON Schema does', async () => {
    const accepts = await compile(llama, stringWith({ pattern: '\\S' }));
    for (const ok of ['x', '  x  ', 'a b']) expect(accepts({ s: ok })).toBe(true);
    for (const bad of ['', '   ']) expect(accepts({ s: bad }), JSON.stringify(bad)).toBe(false);
  });

  it('writes characters that JSON escapes in their escaped form', async () => {
    const accepts = await compile(llama, stringWith({ pattern: '^[a"\\\\]+\\n?$' }));
    for (const ok of ['a"a', 'a\\', '"\n']) expect(accepts({ s: ok }), JSON.stringify(ok)).toBe(true);
    expect(accepts({ s: 'ab' })).toBe(false);
  });

  it('agrees with the regular expression on every string it admits', async () => {
    const patterns = [
      '^[A-Za-z0-9_-]{1,8}$',
      '^(ab|c)+d?$',
      '^\\d{2,3}-\\w+$',
      'x.y',
      '^[^a-c]*$',
      '^(?:no|yes)$',
    ];
    const alphabet = ['a', 'b', 'c', 'd', 'x', 'y', '1', '2', '-', '_', ' ', '.', 'é', '"'];
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const samples = [
      '',
      'ab',
      'abcd',
      'x y',
      'xay',
      '12-ab',
      'no',
      'yes',
      ...Array.from({ length: 300 }, () =>
        Array.from(
          { length: Math.floor(random() * 7) },
          () => alphabet[Math.floor(random() * alphabet.length)],
        ).join(''),
      ),
    ];
    for (const pattern of patterns) {
      const accepts = await compile(llama, stringWith({ pattern }));
      const regex = new RegExp(pattern);
      for (const sample of samples) {
        // The grammar may refuse a matching string that needs escapes it does not write (.), never
        // accept one the pattern refuses.
        if (accepts({ s: sample }))
          expect(regex.test(sample), `${pattern} admitted ${JSON.stringify(sample)}`).toBe(true);
        else if (!/["\\]/.test(sample))
          expect(regex.test(sample), `${pattern} refused ${JSON.stringify(sample)}`).toBe(false);
      }
    }
  });

  it('keeps a plain string for patterns outside the translated subset', async () => {
    for (const pattern of ['^(?=a)a$', '(a)\\1', '\\bword', '^\\p{L}+$', '^a$b', 'a{2000}']) {
      expect(patternToGbnf(pattern, 'c'), pattern).toBeUndefined();
      const accepts = await compile(llama, stringWith({ pattern }));
      expect(accepts({ s: 'anything at all' })).toBe(true);
    }
  });

  it('compiles lengths and counts llama.cpp would refuse, holding what it can', async () => {
    const accepts = await compile(llama, {
      type: 'object',
      properties: {
        long: { type: 'string', minLength: 1, maxLength: 4000 },
        exactly2000: { type: 'string', maxLength: 2000 },
        atLeast: { type: 'string', minLength: 3000 },
        many: { type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 5000 },
      },
    });
    const value = { long: 'x', exactly2000: '', atLeast: 'short', many: [1] };
    expect(accepts(value)).toBe(true);
    expect(accepts({ ...value, long: '' })).toBe(false);
    expect(accepts({ ...value, long: 'x'.repeat(MAX_GRAMMAR_REPETITION) })).toBe(true);
    // Over the grammar's repetition limit: fewer strings, all valid for maxLength 4000.
    expect(accepts({ ...value, long: 'x'.repeat(MAX_GRAMMAR_REPETITION + 1) })).toBe(false);
    expect(accepts({ ...value, many: [] })).toBe(false);
  });

  it('holds integer bounds: small ranges as enums, non-negative and positive integers as digits', async () => {
    const accepts = await compile(
      llama,
      z.toJSONSchema(
        z.object({
          index: z.number().int().min(0).max(2).nullable(),
          count: z.number().int().min(0),
          positive: z.number().int().positive(),
          any: z.number().int().min(-5),
        }),
      ),
    );
    const value = { index: 2, count: 0, positive: 7, any: -9 };
    expect(accepts(value)).toBe(true);
    expect(accepts({ ...value, index: null })).toBe(true);
    expect(accepts({ ...value, count: 120 })).toBe(true);
    for (const bad of [
      { index: 3 },
      { index: -1 },
      { count: -1 },
      { count: 1.5 },
      { positive: 0 },
      { count: '01' },
    ])
      expect(accepts({ ...value, ...bad }), JSON.stringify(bad)).toBe(false);
  });

  it('closes an object that lists no properties (a tool without parameters), keeps a map open', async () => {
    const noParameters = await compile(llama, { type: 'object', properties: {}, required: [] });
    expect(noParameters({})).toBe(true);
    expect(noParameters({ invented: 1 })).toBe(false);
    const map = await compile(llama, z.toJSONSchema(z.record(z.string(), z.number())));
    expect(map({ a: 1, b: 2 })).toBe(true);
    const anyObject = await compile(llama, { type: 'object' });
    expect(anyObject({ a: [1] })).toBe(true);
  });

  it('writes the JSON on one line (the small model spent a third of its tokens on indentation)', async () => {
    const grammar = await createSchemaGrammar(
      llama,
      toGrammarSchema({ type: 'object', properties: { a: { type: 'array', items: { type: 'integer' } } } }),
    );
    const matches = (text: string) =>
      (grammar as unknown as { _testText(t: string): boolean })._testText(`${text}\n\n\n\n`);
    expect(matches('{"a": [1, 2]}')).toBe(true);
    expect(matches(JSON.stringify({ a: [1, 2] }, null, 4))).toBe(false);
  });

  it('compiles the stage schemas at the largest task size a spec allows', async () => {
    const largest = { tools: 12, workflowSteps: 12, subGoals: 16, requiredInteractions: 8 };
    for (const size of [DEFAULT_TASK_SIZE, largest]) {
      for (const [name, schema] of [
        ['toolset', toolsetDraftSchema(size)],
        ['refine', refinedToolsetSchema(size, size.tools, 2)],
        ['rubric', rubricDraftSchema(size)],
        ['coverage', coverageSchema(size.workflowSteps)],
        [
          'judgement',
          judgementSchema({
            forbidden: ['a', 'b', 'c'],
            subGoals: Array(16).fill('g'),
            requiredInteractions: Array(8).fill('i'),
          }),
        ],
      ] as const)
        await expect(
          compile(llama, jsonSchemaResponseFormat(schema, name).json_schema.schema),
          name,
        ).resolves.toBeTypeOf('function');
    }
  });

  it('lets the coverage judge write only verdicts its validation accepts: each step once, in order, a quote when executed', async () => {
    const schema = coverageSchema(2);
    const accepts = await compile(llama, jsonSchemaResponseFormat(schema, 'coverage').json_schema.schema);
    const steps = (...verdicts: [number, boolean, string][]) => ({
      steps: verdicts.map(([index, executed, evidence]) => ({ index, executed, evidence })),
    });
    for (const ok of [steps([0, true, 'called x'], [1, false, '']), steps([0, false, ''], [1, false, ''])]) {
      expect(accepts(ok)).toBe(true);
      expect(schema.safeParse(ok).success).toBe(true);
    }
    for (const bad of [
      steps([0, true, ''], [1, false, '']),
      steps([0, false, ''], [0, false, '']),
      steps([0, false, '']),
    ])
      expect(accepts(bad), JSON.stringify(bad)).toBe(false);
  });
});
