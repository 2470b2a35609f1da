import pg from 'pg';
import type { FunctionTool } from '../../../schemas/function-tool.js';
import { ModelEndpointSchema, type ModelRole } from '../../../schemas/model-endpoint.js';
import type { EpisodeInputData } from '../../../schemas/episode-input.js';
import type { ChatRequestBody, Reply, ScriptedRequest } from '../../../testkit/model-server.js';
import { query } from '../../../testkit/database.js';

/** The task's own tools: one to look an order up, one to search the catalogue. */
export const TOOLS: FunctionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_order',
      description: 'Look up an order by its id.',
      parameters: {
        type: 'object',
        properties: { orderId: { type: 'string' }, includeItems: { type: 'boolean' } },
        required: ['orderId'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'search_products',
      description: 'Search the product catalogue by keywords.',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1, maximum: 50 } },
        required: ['query'],
      },
    },
  },
];

/** I: what the agent is told. */
export const INSTRUCTION = 'My last order arrived broken. Can you sort it out?';
/** C: only the user knows it; the marker must reach the user simulator and nobody else. */
export const HIDDEN_CONTEXT =
  'My order id is ORD-7731. I want a refund, not a replacement. [hidden-marker-C]';
/** A rubric with a marker that no simulator may ever see. */
export const RUBRIC = {
  forbidden: ['Issue a refund twice [rubric-marker]'],
  subGoals: ['Look up the order'],
  requiredInteractions: ['Ask for the order id'],
};

/** Inserts a runnable task row (its own run, index 0). */
export async function insertTask(url: string, taskId: string): Promise<void> {
  await query(
    url,
    `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage, tools, instruction, hidden_context, rubric)
     VALUES ($1, $1, 0, 'persona-1', 'demonstrations', $2::jsonb, $3, $4, $5::jsonb)`,
    [taskId, JSON.stringify(TOOLS), INSTRUCTION, HIDDEN_CONTEXT, JSON.stringify(RUBRIC)],
  );
}

export { query };

/** A model role on the test server; a model name per test keeps the model cache apart. */
export function roleOn(serverUrl: string, model: string): ModelRole {
  return {
    endpoint: ModelEndpointSchema.parse({ baseUrl: serverUrl, model, timeoutMs: 5_000, maxRetries: 2 }),
    // With a seed, sample i is sent with seed i: agent scripts tell rollouts apart by it.
    sampling: { temperature: 0, topP: 1, maxTokens: 256, seed: 0 },
  };
}

/** An episode of `taskId` with every role on the test server. */
export function episodeInput(
  serverUrl: string,
  model: string,
  taskId: string,
  overrides: Partial<EpisodeInputData> = {},
): EpisodeInputData {
  const role = roleOn(serverUrl, model);
  return {
    episodeId: `${taskId}/rollout-${overrides.sampleIndex ?? 0}`,
    taskId,
    purpose: 'rollout',
    sampleIndex: 0,
    policyVersion: 'v0',
    runId: 'run-world',
    agentRoleName: 'policy',
    agent: role,
    toolSimulator: role,
    userSimulator: role,
    maxTurns: 8,
    ...overrides,
  };
}

/** The agent's turn in a request: the number of assistant messages already in it. */
export function turnOf(body: ChatRequestBody): number {
  return body.messages.filter((m) => m.role === 'assistant').length;
}

/** An agent script: reply `turns[t]` at turn t (the last one repeats). */
export function agentTurns(...turns: Array<Reply | ((request: ScriptedRequest) => Reply)>) {
  return (request: ScriptedRequest): Reply => {
    const reply = turns[Math.min(turnOf(request.body), turns.length - 1)]!;
    return typeof reply === 'function' ? reply(request) : reply;
  };
}

/** A tool simulator that invents a new, numbered response for every call it is asked about. */
export function numberingSimulator() {
  let next = 0;
  return () => JSON.stringify({ equivalentTo: null, response: JSON.stringify({ n: next++ }) });
}

/** Text of a request's messages and tools, to search for what a model was shown. */
export function shown(body: ChatRequestBody): string {
  return JSON.stringify({ messages: body.messages, tools: body.tools });
}

/** Parsed `episodes` row. */
export interface EpisodeRow {
  messages: Array<{
    role: string;
    content: string | null;
    tool_call_id?: string;
    tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  }>;
  turns: number;
  tool_calls: number;
  user_questions: number;
  tool_errors: number;
  end_reason: string | null;
}

export async function episodeRow(url: string, episodeId: string): Promise<EpisodeRow | undefined> {
  const rows = await query<EpisodeRow & pg.QueryResultRow>(
    url,
    'SELECT * FROM episodes WHERE episode_id = $1',
    [episodeId],
  );
  return rows[0];
}

/** Every tool call of a transcript with the content of the tool message that answered it. */
export function answeredCalls(messages: EpisodeRow['messages']) {
  const answers = new Map(messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id!, m.content]));
  return messages.flatMap((m) =>
    (m.tool_calls ?? []).map((call) => ({
      name: call.function.name,
      arguments: call.function.arguments,
      answer: answers.get(call.id),
    })),
  );
}
