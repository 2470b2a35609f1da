import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../../activities/llm/index.js';
import { judgeResponse } from '../../../activities/study/judge.js';
import { ModelRoleSchema } from '../../../schemas/model-endpoint.js';
import { createTestDatabase, query, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer, type ScriptedRequest } from '../../../testkit/model-server.js';

/** A judge that rambles first; on the reminder it answers JSON when its question says so. */
function rambler(request: ScriptedRequest): string {
  const question = JSON.stringify(request.body.messages[0]);
  const reminded = request.body.messages.length > 1;
  if (!reminded) return 'Let me think about that.';
  return question.includes('answers on reminder') ? '{"verdict": "INCORRECT"}' : 'Probably correct, I think.';
}

describe('the study judge reminder', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;
  const judge = () =>
    ModelRoleSchema.parse({
      endpoint: { baseUrl: server.url, model: 'judge', maxRetries: 0 },
      sampling: { temperature: 0, maxTokens: 16 },
    });
  const ask = (question: string) =>
    judgeResponse(models, {
      studyId: 'study-reminder',
      judge: judge(),
      question: { questionId: 'q', domain: 'physics', question, answer: '3', options: null },
      response: 'The final answer is \\boxed{roughly three}.',
    });

  beforeAll(async () => {
    db = await createTestDatabase('mw_judge_reminder');
    server = await startModelServer({ script: rambler });
    models = createModelClient({ databaseUrl: db.url, gatewayUrl: null });
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });

  it('asks for the verdict under a JSON schema, so a guided server can only give one of the two', async () => {
    const verdict = await ask('A question the judge answers on reminder.');
    expect(verdict).toMatchObject({ correct: false, judgedBy: 'llm' });
    const [first, reminder] = server.requests.map((r) => r.body);
    expect(first).not.toHaveProperty('response_format');
    expect(reminder).toMatchObject({ response_format: { type: 'json_schema' } });
    expect(JSON.stringify(reminder!.response_format)).toContain('INCORRECT');
  });

  it('records a judge that never answers as a failure, never a score', async () => {
    const verdict = await ask('A question the judge never grades.');
    expect(verdict).toMatchObject({ correct: null, judgedBy: 'judge-failed' });
    const rejections = await query<{ cache_key: string; schema_name: string; raw_output: string }>(
      db.url,
      'SELECT cache_key, schema_name, raw_output FROM llm_rejections',
    );
    expect(rejections).toEqual([
      {
        cache_key: verdict.judgeKey,
        schema_name: 'study-judge-verdict',
        raw_output: 'Probably correct, I think.',
      },
    ]);
  });
});
