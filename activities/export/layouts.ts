import { ASK_USER_TOOL } from '../world/index.js';
import type { KeptTask } from './kept-tasks.js';

/**
 * One kept task in each export layout (docs/synthesis.md "Export formats"). Pure: the JSONL and Parquet
 * writers and the tests all build rows here, so the layouts cannot drift apart.
 */

/** The agent loop the verl adapter registers; each verl row names it (`agent_name`). */
export const VERL_AGENT_NAME = 'mockworld_agent';
/** verl's `ability` column for every mockworld row. */
export const VERL_ABILITY = 'agentic_tool_use';

/** What every row of one run's export shares. */
export interface ExportContext {
  readonly runId: string;
  /** The system prompt the run's agent saw (its templates). */
  readonly agentSystemPrompt: string;
}

/** The prompt as the mock world shows it to the agent: its system prompt, then the instruction. */
export function promptOf(task: KeptTask, context: ExportContext) {
  return [
    { role: 'system', content: context.agentSystemPrompt },
    { role: 'user', content: task.instruction },
  ];
}

/** The task's tools plus `ask_user`, the agent's way to the user (OpenAI function tools). */
export function toolsOf(task: KeptTask) {
  return [...task.tools, ASK_USER_TOOL];
}

/** The per-tool kwargs verl hands a tool when a trajectory creates it: which task it serves. */
function toolsKwargsOf(task: KeptTask) {
  return Object.fromEntries(
    toolsOf(task).map((tool) => [tool.function.name, { create_kwargs: { task_id: task.task_id } }]),
  );
}

/** A line of `tasks.jsonl` (what `mockworld import` reads back). */
export function taskRecord(task: KeptTask, context: ExportContext) {
  return {
    task_id: task.task_id,
    persona_id: task.persona_id,
    prompt: promptOf(task, context),
    tools: toolsOf(task),
    hidden_context: task.hidden_context,
    rubric: task.rubric,
    workflow: task.workflow,
    demonstrations: task.demonstrations,
    provenance: task.provenance,
  };
}

/** A line of `verl.jsonl`: verl's RL layout with nested objects as they are. */
export function verlRecord(task: KeptTask, context: ExportContext) {
  return {
    data_source: `mockworld/${context.runId}`,
    prompt: promptOf(task, context),
    ability: VERL_ABILITY,
    reward_model: { style: 'rubric', ground_truth: JSON.stringify(task.rubric) },
    extra_info: {
      index: task.idx,
      task_id: task.task_id,
      rubric: task.rubric,
      hidden_context: task.hidden_context,
      tools: toolsOf(task),
      tools_kwargs: toolsKwargsOf(task),
    },
  };
}

/**
 * A row of `verl.parquet`: verl's RL layout (`data_source`, `prompt`, `ability`, `reward_model`,
 * `extra_info`, `agent_name`). What differs from task to task in shape (the tools and their JSON
 * Schemas, the per-tool kwargs, the rubric) is a JSON string: as nested columns, pyarrow would
 * merge every row's shapes into one struct of all fields, mostly null, and a reader would no
 * longer see a task's own schemas. The prompt is a real list of messages (verl templates it).
 */
export function verlParquetRow(task: KeptTask, context: ExportContext) {
  return {
    data_source: `mockworld/${context.runId}`,
    prompt: promptOf(task, context),
    ability: VERL_ABILITY,
    reward_model: { style: 'rubric', ground_truth: JSON.stringify(task.rubric) },
    extra_info: {
      index: BigInt(task.idx),
      split: 'train',
      run_id: context.runId,
      task_id: task.task_id,
      tools: JSON.stringify(toolsOf(task)),
      tools_kwargs: JSON.stringify(toolsKwargsOf(task)),
      rubric: JSON.stringify(task.rubric),
      hidden_context: task.hidden_context,
    },
    agent_name: VERL_AGENT_NAME,
  };
}

/**
 * A row of the Hugging Face datasets layout: the task as `tasks.jsonl` holds it, with the
 * fixed-shape parts as columns (prompt, rubric lists, workflow) and the rest as JSON strings.
 */
export function hfRow(task: KeptTask, context: ExportContext) {
  return {
    task_id: task.task_id,
    persona_id: task.persona_id,
    prompt: promptOf(task, context),
    tools: JSON.stringify(toolsOf(task)),
    hidden_context: task.hidden_context,
    rubric: {
      forbidden: task.rubric.forbidden,
      subGoals: task.rubric.subGoals,
      requiredInteractions: task.rubric.requiredInteractions,
    },
    workflow: task.workflow ?? [],
    demonstrations: JSON.stringify(task.demonstrations),
    provenance: JSON.stringify(task.provenance ?? null),
  };
}

/**
 * Lines of `sft.jsonl`: each kept demonstration as a chat (OpenAI messages: the assistant's
 * `tool_calls` with JSON-string `arguments`, `tool` answers by `tool_call_id`) with the tools it
 * could call, for supervised fine-tuning on the teacher's trajectories.
 */
export function sftRecords(task: KeptTask) {
  return task.demonstrations.map((demonstration) => ({
    task_id: task.task_id,
    episode_id: demonstration.episode_id,
    messages: demonstration.messages,
    tools: toolsOf(task),
  }));
}
