import { z } from 'zod';
import { describe, expect, it, vi } from 'vitest';
import { backoffDelayMs, retryAfterMs } from '../../../activities/llm/backoff.js';
import { cacheKey, canonicalJson, identify } from '../../../activities/llm/cache-key.js';
import { TokenBucket } from '../../../activities/llm/rate-limiter.js';
import {
  checkStructured,
  extractJson,
  jsonSchemaResponseFormat,
} from '../../../activities/llm/structured-output.js';
import { sampling } from './fixtures.js';

describe('retry timing', () => {
  it('reads Retry-After as seconds, as an HTTP date, and retry-after-ms before either', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(retryAfterMs(new Headers({ 'retry-after': '3' }), now)).toBe(3000);
    expect(retryAfterMs(new Headers({ 'retry-after': '0.5' }), now)).toBe(500);
    expect(retryAfterMs(new Headers({ 'retry-after': 'Tue, 01 Jan 2030 00:00:07 GMT' }), now)).toBe(7000);
    expect(retryAfterMs(new Headers({ 'retry-after': '3', 'retry-after-ms': '250' }), now)).toBe(250);
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(retryAfterMs(new Headers({}), now)).toBeUndefined();
  });

  it('grows the backoff exponentially within jitter and caps it', () => {
    const options = { baseDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffDelayMs(1, options, () => 0)).toBe(50);
    expect(backoffDelayMs(1, options, () => 1)).toBe(100);
    expect(backoffDelayMs(3, options, () => 0)).toBe(200);
    expect(backoffDelayMs(3, options, () => 1)).toBe(400);
    expect(backoffDelayMs(10, options, () => 1)).toBe(1000);
  });
});

describe('cache keys', () => {
  const endpoint = { baseUrl: 'http://m:8000/v1', model: 'm' };
  const messages = [{ role: 'user' as const, content: 'hi' }];

  it('do not depend on the key order of the request', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: undefined } })).toBe(
      '{"a":{"d":[1,{"x":1,"y":2}]},"b":1}',
    );
    const one = identify(endpoint, { messages, sampling: { temperature: 0, topP: 1, maxTokens: 8 } });
    const two = identify(endpoint, { messages, sampling: { maxTokens: 8, topP: 1, temperature: 0 } });
    expect(cacheKey(one)).toBe(cacheKey(two));
  });

  it('differ by sample index, policy version, model, sampling, tool choice and a trailing-slash-insensitive base URL', () => {
    const base = cacheKey(identify(endpoint, { messages, sampling }));
    expect(cacheKey(identify({ ...endpoint, baseUrl: 'http://m:8000/v1/' }, { messages, sampling }))).toBe(
      base,
    );
    // An unset tool choice keeps the key every call had before the setting existed.
    expect(cacheKey(identify(endpoint, { messages, sampling, toolChoice: undefined }))).toBe(base);
    const others = [
      cacheKey(identify(endpoint, { messages, sampling }, 1)),
      cacheKey(identify(endpoint, { messages, sampling }, 0, 'step-10')),
      cacheKey(identify({ ...endpoint, model: 'other' }, { messages, sampling })),
      cacheKey(identify(endpoint, { messages, sampling: { ...sampling, temperature: 1 } })),
      cacheKey(identify(endpoint, { messages, sampling, responseFormat: { type: 'json_object' } })),
      cacheKey(identify(endpoint, { messages, sampling, toolChoice: 'required' })),
    ];
    expect(new Set([base, ...others]).size).toBe(7);
  });
});

describe('JSON extraction', () => {
  it('accepts plain JSON, fenced JSON and JSON wrapped in prose', () => {
    expect(extractJson(' {"a": 1} ')).toEqual({ ok: true, value: { a: 1 } });
    expect(extractJson('Here you go:\n```json\n{"a": 2}\n```\nDone.')).toEqual({ ok: true, value: { a: 2 } });
    expect(extractJson('Sure! {"a": {"b": "}{"}} Hope that helps {x}')).toEqual({
      ok: true,
      value: { a: { b: '}{' } },
    });
  });

  it('reports an object that never closes as truncated and text without an object as not JSON', () => {
    expect(extractJson('{"a": [1, 2, "unfinished')).toMatchObject({ ok: false, reason: 'truncated' });
    expect(extractJson('no json here')).toMatchObject({ ok: false, reason: 'not_json' });
    expect(extractJson('{"a": nope}')).toMatchObject({ ok: false, reason: 'not_json' });
  });

  it('names every invalid path of a schema-invalid answer', () => {
    const schema = z.object({ name: z.string(), steps: z.array(z.object({ tool: z.string() })) });
    const message = { role: 'assistant' as const, content: '{"name": 3, "steps": [{}]}', refusal: null };
    const checked = checkStructured(message, 'stop', schema, 1000);
    expect(checked).toMatchObject({ ok: false, reason: 'schema_invalid' });
    expect(!checked.ok && checked.detail).toContain('at name');
    expect(!checked.ok && checked.detail).toContain('at steps.0.tool');
  });

  it('rejects an answer over the size cap before parsing it', () => {
    const message = { role: 'assistant' as const, content: `{"a": "${'x'.repeat(2000)}"}`, refusal: null };
    expect(checkStructured(message, 'stop', z.object({ a: z.string() }), 1000)).toMatchObject({
      ok: false,
      reason: 'too_large',
    });
  });

  it('sends schemas that OpenAI strict mode would refuse (open objects, optional fields) as non-strict', () => {
    const strictOf = (schema: z.ZodType) => jsonSchemaResponseFormat(schema, 'S').json_schema.strict;
    expect(strictOf(z.object({ a: z.array(z.object({ b: z.number() })) }))).toBe(true);
    expect(strictOf(z.object({ a: z.string().optional() }))).toBe(false);
    expect(strictOf(z.object({ a: z.record(z.string(), z.string()) }))).toBe(false);
    expect(strictOf(z.object({ a: z.array(z.unknown()) }))).toBe(false);
    expect(strictOf(z.object({ a: z.object({ b: z.string() }).loose() }))).toBe(false);
  });

  it('builds a strict json_schema response format and refuses names OpenAI would reject', () => {
    const format = jsonSchemaResponseFormat(z.object({ a: z.string() }), 'Answer_1');
    expect(format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'Answer_1',
        strict: true,
        schema: {
          type: 'object',
          properties: { a: { type: 'string' } },
          required: ['a'],
          additionalProperties: false,
        },
      },
    });
    expect(() => jsonSchemaResponseFormat(z.object({}), 'has spaces')).toThrow(TypeError);
  });
});

describe('token bucket', () => {
  it('admits a cost above its capacity when full and then makes later costs wait for the debt', () => {
    vi.useFakeTimers({ now: 0 }); // the clock stands still between the calls
    try {
      const bucket = new TokenBucket(600); // 10 per second, capacity 10
      expect(bucket.waitMs(50)).toBe(0);
      bucket.take(50);
      expect(bucket.waitMs(1)).toBe(4100); // a debt of 40 tokens, then 1 more, at 10 per second
      bucket.adjust(49); // the call used 1 token after all
      expect(bucket.waitMs(1)).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
