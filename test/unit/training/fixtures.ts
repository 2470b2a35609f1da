import type { FunctionTool } from '../../../schemas/function-tool.js';
import { query } from '../../../testkit/database.js';

/** The task's own tool. */
export const TOOLS: FunctionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_order',
      description: 'Look up an order by its id.',
      parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
    },
  },
];

/** A finished transcript as the episode runner stores it: system prompt, instruction, turns. */
export const TRANSCRIPT = [
  { role: 'system', content: 'You are an agent. [system-marker]' },
  { role: 'user', content: 'Where is my order?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'c1', type: 'function', function: { name: 'get_order', arguments: '{"orderId":"O-1"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'c1', content: '{"status":"shipped"}' },
  { role: 'assistant', content: 'It has shipped.' },
];

/** Inserts `count` tasks of synthesis run `runId` at the given stage (idx 0..count-1). */
export async function insertTasks(
  url: string,
  runId: string,
  count: number,
  stage = 'kept',
): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${runId}/task-${i}`);
  for (const [idx, taskId] of ids.entries()) {
    await query(
      url,
      `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage, tools, instruction, hidden_context)
       VALUES ($1, $2, $3, 'p', $4, $5::jsonb, 'Where is my order?', 'Order O-1.')`,
      [taskId, runId, idx, stage, JSON.stringify(TOOLS)],
    );
  }
  return ids;
}

/** Inserts one episode with the transcript above; `endReason` null leaves it running. */
export async function insertEpisode(
  url: string,
  episodeId: string,
  taskId: string,
  fields: { purpose?: string; turns?: number; policyVersion?: string; endReason?: string | null } = {},
): Promise<void> {
  await query(
    url,
    `INSERT INTO episodes (episode_id, task_id, purpose, sample_index, policy_version, messages, turns,
                           tool_calls, user_questions, tool_errors, end_reason)
     VALUES ($1, $2, $3, 0, $4, $5::jsonb, $6, 1, 0, 0, $7)`,
    [
      episodeId,
      taskId,
      fields.purpose ?? 'rollout',
      fields.policyVersion ?? 'step-0',
      JSON.stringify(TRANSCRIPT),
      fields.turns ?? 2,
      fields.endReason === undefined ? 'final_answer' : fields.endReason,
    ],
  );
}

/** Inserts a judgement of an episode. */
export async function insertJudgement(
  url: string,
  episodeId: string,
  taskId: string,
  j: { reward: number; forbidden: boolean; subGoals: number | null; interactions: number | null },
): Promise<void> {
  await query(
    url,
    `INSERT INTO judgements (episode_id, task_id, run_id, judge_model, template_id, llm_cache_key, verdicts,
                             forbidden_violated, sub_goal_fraction, interaction_fraction, reward)
     VALUES ($1, $2, 'r', 'judge', 'v1/judge@0000000000000000', 'k', '{}'::jsonb, $3, $4, $5, $6)`,
    [episodeId, taskId, j.forbidden, j.subGoals, j.interactions, j.reward],
  );
}

/** Inserts one ledger row of the model layer. */
export async function insertCall(
  url: string,
  key: string,
  runId: string,
  role: string,
  policyVersion: string,
  prompt: number,
  completion: number,
): Promise<void> {
  await query(
    url,
    `INSERT INTO llm_calls (cache_key, endpoint, model, request_hash, sample_index, policy_version, run_id, role,
                            response, prompt_tokens, completion_tokens, latency_ms, upstream_attempts)
     VALUES ($1, 'http://x', 'm', 'h', 0, $2, $3, $4, '{}'::jsonb, $5, $6, 1, 1)`,
    [key, policyVersion, runId, role, prompt, completion],
  );
}

export { query };
