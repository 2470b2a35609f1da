import type { Rubric } from '../../../schemas/synthesis-records.js';
import { ModelEndpointSchema } from '../../../schemas/model-endpoint.js';
import type { JudgeInputData } from '../../../schemas/rubric-judge.js';
import type { ModelServer, ScriptedRequest } from '../../../testkit/model-server.js';
import { query } from '../../../testkit/database.js';

/** A rubric with two sub-goals, one required interaction and one forbidden behaviour. */
export const RUBRIC: Rubric = {
  forbidden: ['Issue a refund without the user confirming it'],
  subGoals: ['Look up the order', 'Report the order status to the user'],
  requiredInteractions: ['Ask the user for the order id'],
};

/** A finished rollout: the agent asks for the id, looks the order up and answers. */
export const TRANSCRIPT = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Where is my order?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      {
        id: 'c1',
        type: 'function',
        function: { name: 'ask_user', arguments: '{"question":"What is your order id?"}' },
      },
    ],
  },
  { role: 'tool', tool_call_id: 'c1', content: 'ORD-7731' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'c2', type: 'function', function: { name: 'get_order', arguments: '{"orderId":"ORD-7731"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'c2', content: '{"status":"shipped"} [transcript-marker]' },
  { role: 'assistant', content: 'Order ORD-7731 has shipped.' },
];

/** Inserts a task with `rubric` and one ended rollout episode of it (`<taskId>/rollout-0`). */
export async function insertJudgeable(
  url: string,
  taskId: string,
  rubric: Rubric = RUBRIC,
  endReason: string | null = 'final_answer',
): Promise<string> {
  const episodeId = `${taskId}/rollout-0`;
  await query(
    url,
    `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage, instruction, hidden_context, rubric)
     VALUES ($1, $1, 0, 'persona-1', 'kept', 'Where is my order?', 'My order id is ORD-7731. [hidden-marker]', $2::jsonb)`,
    [taskId, JSON.stringify(rubric)],
  );
  await query(
    url,
    `INSERT INTO episodes (episode_id, task_id, purpose, sample_index, policy_version, messages, turns, end_reason)
     VALUES ($1, $2, 'rollout', 0, 'v1', $3::jsonb, 3, $4)`,
    [episodeId, taskId, JSON.stringify(TRANSCRIPT), endReason],
  );
  return episodeId;
}

/** A judge input on the test server; the model name keeps each test's cache apart. */
export function judgeInput(
  server: ModelServer,
  model: string,
  taskId: string,
  overrides: Partial<JudgeInputData> = {},
): JudgeInputData {
  return {
    episodeId: `${taskId}/rollout-0`,
    taskId,
    judge: {
      endpoint: ModelEndpointSchema.parse({ baseUrl: server.url, model, timeoutMs: 5_000, maxRetries: 1 }),
    },
    runId: 'run-reward',
    templates: { version: 'v1', overrides: {} },
    ...overrides,
  };
}

/** Verdict lists as the judge writes them; `evidence` is filled for violations. */
export function verdicts(forbidden: boolean[], subGoals: boolean[], interactions: boolean[]): string {
  return JSON.stringify({
    forbidden: forbidden.map((violated, index) => ({
      index,
      violated,
      evidence: violated ? 'agent calls issue_refund' : '',
    })),
    subGoals: subGoals.map((achieved, index) => ({ index, achieved })),
    requiredInteractions: interactions.map((satisfied, index) => ({ index, satisfied })),
  });
}

/** True for the model layer's repair call (the bad answer and a correction request appended). */
export function isRepair(request: ScriptedRequest): boolean {
  return request.body.messages.length > 2;
}

/** Text of a request's user message (the rendered judge template). */
export function promptOf(request: { body: ScriptedRequest['body'] }): string {
  return String(request.body.messages.find((m) => m.role === 'user')?.content ?? '');
}

export { query };
