import { Ajv } from 'ajv';
import { describe, expect, it, vi } from 'vitest';
import type { FunctionTool } from '../../../schemas/function-tool.js';
import { ASK_USER_TOOL, argsKey, canonicalArgs, validateToolCall } from '../../../activities/world/index.js';
import { roleOf } from '../../../testkit/model-server.js';
import { TOOLS } from './fixtures.js';

const tools = [...TOOLS, ASK_USER_TOOL];

function observation(check: ReturnType<typeof validateToolCall>) {
  if (check.ok) throw new Error('expected an error observation');
  return { problem: check.problem, ...JSON.parse(check.observation) };
}

describe('canonical tool calls', () => {
  it('writes arguments with sorted keys at every depth and no whitespace', () => {
    expect(canonicalArgs({ b: 1, a: { d: [2, { z: 1, y: 0 }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[2,{"y":0,"z":1}]},"b":1}',
    );
  });

  it('gives calls that differ only in key order or formatting the same args key', () => {
    const one = argsKey(JSON.parse('{"orderId": "A", "includeItems": true}'));
    const two = argsKey(JSON.parse('{"includeItems":true,"orderId":"A"}'));
    expect(one).toBe(two);
    expect(one).toMatch(/^[0-9a-f]{64}$/);
    expect(argsKey({ orderId: 'B', includeItems: true })).not.toBe(one);
  });
});

describe('tool-call validation', () => {
  it('accepts a valid call and returns its parsed arguments', () => {
    const check = validateToolCall(tools, { name: 'get_order', arguments: '{"orderId":"A"}' });
    expect(check).toMatchObject({ ok: true, args: { orderId: 'A' } });
    expect(check.ok && check.tool.function.name).toBe('get_order');
  });

  it('answers an unknown tool with an observation that lists the available tools', () => {
    const seen = observation(validateToolCall(tools, { name: 'refund_everything', arguments: '{}' }));
    expect(seen.problem).toBe('unknown_tool');
    expect(seen.message).toContain('"refund_everything" does not exist');
    expect(seen.available_tools).toEqual(['get_order', 'search_products', 'ask_user']);
  });

  it('answers arguments that are not a JSON object with an observation saying so', () => {
    expect(
      observation(validateToolCall(tools, { name: 'get_order', arguments: '{orderId: A' })),
    ).toMatchObject({
      problem: 'invalid_json',
      error: 'invalid_arguments',
    });
    expect(observation(validateToolCall(tools, { name: 'get_order', arguments: '["A"]' })).message).toContain(
      'got an array',
    );
  });

  it('lists every schema violation of the arguments', () => {
    const seen = observation(
      validateToolCall(tools, {
        name: 'get_order',
        arguments: '{"orderId":5,"includeItems":"yes","coupon":"X"}',
      }),
    );
    expect(seen.problem).toBe('invalid_arguments');
    expect(seen.violations).toEqual(
      expect.arrayContaining([
        '/orderId: must be string',
        '/includeItems: must be boolean',
        '(root): must NOT have additional properties ("coupon")',
      ]),
    );
    const missing = observation(
      validateToolCall(tools, { name: 'search_products', arguments: '{"limit":500}' }),
    );
    expect(missing.violations).toEqual(
      expect.arrayContaining(["(root): must have required property 'query'", '/limit: must be <= 50']),
    );
  });

  it('reads empty arguments text as an empty object, still checked against the schema', () => {
    const seen = observation(validateToolCall(tools, { name: 'get_order', arguments: '' }));
    expect(seen.violations).toEqual(["(root): must have required property 'orderId'"]);
    expect(
      validateToolCall([ASK_USER_TOOL], { name: 'ask_user', arguments: '{"question":"Which order?"}' }).ok,
    ).toBe(true);
  });

  it('compiles each parameters schema once per process, whatever the tool object', () => {
    const compile = vi.spyOn(Ajv.prototype, 'compile');
    const make = (): FunctionTool => ({
      type: 'function',
      function: {
        name: 'compile_once',
        description: 'A tool seen for the first time.',
        parameters: { type: 'object', properties: { unique_compile_probe: { type: 'number' } } },
      },
    });
    for (let i = 0; i < 5; i++) validateToolCall([make()], { name: 'compile_once', arguments: '{}' });
    expect(compile).toHaveBeenCalledTimes(1);
    compile.mockRestore();
  });

  it('never crashes on schemas Ajv dislikes: other drafts, unknown keywords, broken references', () => {
    const odd: FunctionTool = {
      type: 'function',
      function: {
        name: 'odd',
        description: 'A generated tool with an unusual schema.',
        parameters: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { when: { type: 'string', format: 'date-time', 'x-example': 'now' } },
          required: ['when'],
        },
      },
    };
    expect(validateToolCall([odd], { name: 'odd', arguments: '{"when":"tomorrow"}' }).ok).toBe(true);
    expect(validateToolCall([odd], { name: 'odd', arguments: '{}' }).ok).toBe(false);
    const broken: FunctionTool = {
      type: 'function',
      function: {
        name: 'broken',
        description: 'A tool whose schema points nowhere.',
        parameters: { type: 'object', properties: { item: { $ref: '#/definitions/missing' } } },
      },
    };
    expect(validateToolCall([broken], { name: 'broken', arguments: '{"item":1}' }).ok).toBe(true);
    expect(validateToolCall([broken], { name: 'broken', arguments: '3' }).ok).toBe(false);
  });
});

describe('the test model server', () => {
  it('takes the role from the X-Mockworld-Role header before any other convention', () => {
    const body = {
      model: 'm',
      messages: [{ role: 'system', content: 'role: judge' }],
      metadata: { role: 'x' },
    };
    expect(roleOf(body, 'tool-simulator')).toBe('tool-simulator');
    expect(roleOf(body)).toBe('x');
  });
});
