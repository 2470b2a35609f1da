import { z } from 'zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createModelClient,
  StructuredOutputRejectedError,
  type ModelClient,
} from '../../../activities/llm/index.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../../testkit/model-server.js';
import { endpointOf, query, sampling, system } from './fixtures.js';

const Rubric = z.object({
  subGoals: z.array(z.string()).min(1),
  requiredInteractions: z.array(z.string()),
  forbidden: z.array(z.string()),
});

const VALID = {
  subGoals: ['find a flight'],
  requiredInteractions: ['ask the budget'],
  forbidden: ['book without consent'],
};

describe('structured outputs', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;

  beforeAll(async () => {
    db = await createTestDatabase('mw_llm_structured');
    server = await startModelServer({ script: [{ role: 'rubric', reply: JSON.stringify(VALID) }] });
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 20 } });
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => server.resetStats());

  const rubric = (model: string, task: string) =>
    models.structured(
      {
        endpoint: endpointOf(server, model),
        messages: [system('rubric'), { role: 'user', content: `Write the rubric for: ${task}` }],
        sampling,
        runId: 'run-structured',
        role: 'rubric',
      },
      Rubric,
      'Rubric',
    );

  const rejectionRows = (cacheKey: string) =>
    query<{ reason: string; schema_name: string; raw_output: string; role: string }>(
      db.url,
      'SELECT * FROM llm_rejections WHERE cache_key = $1',
      [cacheKey],
    );

  it('parses a valid answer without a repair call and asks for a strict json_schema', async () => {
    const result = await rubric('s-valid', 'a trip');
    expect(result).toMatchObject({ value: VALID, repaired: false, cached: false });
    expect(server.requestCount()).toBe(1);
    expect(server.requests[0]?.body.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'Rubric', strict: true, schema: { type: 'object', additionalProperties: false } },
    });
  });

  it('extracts JSON wrapped in prose and code fences', async () => {
    server.setScript([
      { role: 'rubric', reply: `Here it is:\n\`\`\`json\n${JSON.stringify(VALID)}\n\`\`\`\nAnything else?` },
    ]);
    try {
      expect((await rubric('s-fenced', 'a trip')).value).toEqual(VALID);
    } finally {
      server.setScript([{ role: 'rubric', reply: JSON.stringify(VALID) }]);
    }
  });

  it('repairs schema-invalid content with one call that names every problem', async () => {
    server.injectFaults({ kind: 'schema-invalid', content: '{"subGoals": [], "forbidden": "nothing"}' });
    const result = await rubric('s-repair', 'a dinner');
    expect(result).toMatchObject({ value: VALID, repaired: true });
    expect(server.requestCount()).toBe(2);
    const repairMessages = server.requests[1]!.body.messages;
    expect(repairMessages.at(-2)).toEqual({
      role: 'assistant',
      content: '{"subGoals": [], "forbidden": "nothing"}',
    });
    const instruction = String(repairMessages.at(-1)?.content);
    expect(instruction).toContain('at subGoals');
    expect(instruction).toContain('at requiredInteractions');
    expect(instruction).toContain('at forbidden');
    expect(result.usage.promptTokens).toBeGreaterThan(0);
  });

  it('repairs JSON content cut off by the token limit', async () => {
    server.injectFaults({ kind: 'truncated-json' });
    const result = await rubric('s-truncated', 'a concert');
    expect(result.repaired).toBe(true);
    expect(String(server.requests[1]!.body.messages.at(-1)?.content)).toContain('(truncated)');
  });

  it('records a rejection and throws StructuredOutputRejectedError when the repair is invalid too', async () => {
    server.injectFaults({ kind: 'schema-invalid' }, { kind: 'schema-invalid' });
    const error = await rubric('s-reject', 'a museum').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StructuredOutputRejectedError);
    const rejected = error as StructuredOutputRejectedError;
    expect(rejected).toMatchObject({ schemaName: 'Rubric', reason: 'schema_invalid' });
    expect(server.requestCount()).toBe(2);
    expect(await rejectionRows(rejected.cacheKey)).toMatchObject([
      { reason: 'schema_invalid', schema_name: 'Rubric', raw_output: '{"unexpected": true}', role: 'rubric' },
    ]);
  });

  it('rejects again from the cache, without upstream calls, when the rejected call is retried', async () => {
    const rejectionsBefore = (await models.usageByRole('run-structured')).find(
      (u) => u.role === 'rubric',
    )?.rejections;
    server.injectFaults({ kind: 'schema-invalid' }, { kind: 'schema-invalid' });
    const first = await rubric('s-reject-retry', 'a zoo').catch((e: unknown) => e);
    const retried = await rubric('s-reject-retry', 'a zoo').catch((e: unknown) => e);
    expect(retried).toBeInstanceOf(StructuredOutputRejectedError);
    expect((retried as StructuredOutputRejectedError).cacheKey).toBe(
      (first as StructuredOutputRejectedError).cacheKey,
    );
    expect(server.requestCount()).toBe(2);
    expect(await rejectionRows((first as StructuredOutputRejectedError).cacheKey)).toHaveLength(1);
    const usage = await models.usageByRole('run-structured');
    expect(usage.find((u) => u.role === 'rubric')?.rejections).toBe((rejectionsBefore ?? 0) + 1);
  });

  it('treats a 2 MB answer as too large: one repair call echoing only an excerpt, then success', async () => {
    server.injectFaults({ kind: 'huge-content' });
    const result = await rubric('s-huge', 'a library');
    expect(result.repaired).toBe(true);
    const repairBody = JSON.stringify(server.requests[1]!.body);
    expect(repairBody.length).toBeLessThan(64 * 1024);
    expect(String(server.requests[1]!.body.messages.at(-1)?.content)).toContain('too_large');
  });

  it('rejects a 2 MB answer whose repair is 2 MB too, keeping a bounded raw output', async () => {
    server.injectFaults({ kind: 'huge-content' }, { kind: 'huge-content' });
    const error = (await rubric('s-huge-twice', 'a stadium').catch(
      (e: unknown) => e,
    )) as StructuredOutputRejectedError;
    expect(error).toBeInstanceOf(StructuredOutputRejectedError);
    expect(error.reason).toBe('too_large');
    const [row] = await rejectionRows(error.cacheKey);
    expect(row?.raw_output.length).toBeLessThanOrEqual(16_384);
  });
});
