import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { planChat, toAnswer } from '../../../services/embedded-model/chat-prompt.js';
import { toGrammarSchema } from '../../../services/embedded-model/json-schema-grammar.js';
import { createSchemaGrammar } from '../../../services/embedded-model/schema-grammar.js';
import { ChatCompletionRequestSchema } from '../../../schemas/openai-chat.js';

/**
 * Compiles a translated schema as the server does and returns a checker that says whether a
 * value's JSON text is a complete match of the grammar (which ends with four newlines).
 */
async function compile(llama: Llama, schema: unknown) {
  const grammar = await createSchemaGrammar(llama, toGrammarSchema(schema));
  const test = grammar as unknown as { _testText(text: string): boolean };
  return (value: unknown) => test._testText(`${JSON.stringify(value)}\n\n\n\n`);
}

describe('JSON Schema to grammar translation', () => {
  let llama: Llama;
  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  });

  it('translates a zod object with optional, nullable, enum, array, record and union fields', async () => {
    const Schema = z.object({
      a: z.string().max(10),
      b: z.number().int().min(0).optional(),
      c: z.enum(['x', 'y']).nullable(),
      d: z.array(z.boolean()).max(3),
      e: z.record(z.string(), z.number()),
      f: z.url(),
      h: z.literal('k'),
      u: z.union([z.string(), z.number()]),
      any: z.unknown(),
    });
    const accepts = await compile(llama, z.toJSONSchema(Schema));
    const valid = {
      a: 'hi',
      b: 3,
      c: null,
      d: [true],
      e: { k: 1 },
      f: 'http://x',
      h: 'k',
      u: 1,
      any: { z: [1] },
    };
    expect(accepts(valid)).toBe(true);
    expect(accepts({ ...valid, c: 'z' })).toBe(false);
    expect(accepts({ ...valid, h: 'other' })).toBe(false);
    expect(accepts({ ...valid, d: [true, false, true, false] })).toBe(false);
  });

  it('keeps recursive schemas recursive through $defs', async () => {
    type Node = { name: string; children: Node[] };
    const NodeSchema: z.ZodType<Node> = z.lazy(() =>
      z.object({ name: z.string(), children: z.array(NodeSchema) }),
    );
    const accepts = await compile(llama, z.toJSONSchema(NodeSchema));
    expect(accepts({ name: 'r', children: [{ name: 'c', children: [] }] })).toBe(true);
    expect(accepts({ name: 'r', children: [{ name: 'c' }] })).toBe(false);
  });

  it('admits any JSON value for an empty schema rather than only null', async () => {
    const accepts = await compile(llama, {});
    for (const value of [null, 1, 'x', [1, 'a'], { k: { n: [true] } }]) expect(accepts(value)).toBe(true);
  });
});

describe('chat planning', () => {
  const request = (body: unknown) => ChatCompletionRequestSchema.parse(body);
  const weather = {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  };

  it('describes tools in the system message and constrains the answer to a call or content', () => {
    const plan = planChat(request({ messages: [{ role: 'user', content: 'hi' }], tools: [weather] }));
    expect(plan.history[0]).toMatchObject({ type: 'system' });
    expect(JSON.stringify(plan.history[0])).toContain('get_weather');
    expect(plan.mode.kind).toBe('tools');
    const call = toAnswer(
      plan.mode,
      '{"tool_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}}',
      false,
    );
    expect(call.finish_reason).toBe('tool_calls');
    expect(call.tool_calls?.[0]?.function).toEqual({ name: 'get_weather', arguments: '{"city":"Oslo"}' });
    expect(toAnswer(plan.mode, '{"content": "hello"}', false)).toEqual({
      content: 'hello',
      finish_reason: 'stop',
    });
    expect(toAnswer(plan.mode, '{"content": "hel', true)).toEqual({
      content: '{"content": "hel',
      finish_reason: 'length',
    });
  });

  it('shows earlier tool calls and their results to the model', () => {
    const plan = planChat(
      request({
        messages: [
          { role: 'user', content: 'weather?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
        ],
        tools: [weather],
      }),
    );
    expect(plan.history.map((h) => h.type)).toEqual(['system', 'user', 'model', 'user', 'model']);
    expect(JSON.stringify(plan.history[2])).toContain('tool_call');
    expect(JSON.stringify(plan.history[3])).toContain('sunny');
  });

  it('rejects a tool result that answers no earlier call', () => {
    expect(() =>
      planChat(
        request({ messages: [{ role: 'tool', tool_call_id: 'nope', content: 'x' }], tools: [weather] }),
      ),
    ).toThrow(/answers no earlier assistant tool call/);
  });

  it('plans plain text without tools when tool_choice is none', () => {
    const plan = planChat(
      request({ messages: [{ role: 'user', content: 'hi' }], tools: [weather], tool_choice: 'none' }),
    );
    expect(plan.mode.kind).toBe('text');
    expect(plan.history.map((h) => h.type)).toEqual(['user', 'model']);
  });
});
