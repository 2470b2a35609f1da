import type pg from 'pg';
import { TaskToolsSchema, type FunctionTool } from '../../schemas/function-tool.js';
import { ASK_USER_TOOL_NAME } from './ask-user.js';
import { TaskNotFoundError, TaskNotReadyError } from './errors.js';

/** What the mock world needs of a task. */
export interface WorldTask {
  readonly taskId: string;
  /** I: what the agent is told. */
  readonly instruction: string;
  /** C: what only the simulated user knows (seed eq. 3). */
  readonly hiddenContext: string;
  /** The task's own tool suite, offered to the agent beside `ask_user`. */
  readonly tools: readonly FunctionTool[];
}

/**
 * Loads a task's tools, instruction and hidden context. Throws {@link TaskNotFoundError} for an
 * unknown id and {@link TaskNotReadyError} when a part is missing, the tools are not valid
 * function-calling specs, or a tool takes the built-in `ask_user` name.
 */
export async function loadTask(pool: pg.Pool, taskId: string): Promise<WorldTask> {
  const { rows } = await pool.query<{
    tools: unknown;
    instruction: string | null;
    hidden_context: string | null;
  }>('SELECT tools, instruction, hidden_context FROM tasks WHERE task_id = $1', [taskId]);
  const row = rows[0];
  if (!row) throw new TaskNotFoundError(taskId);
  if (!row.instruction) throw new TaskNotReadyError(taskId, 'it has no instruction');
  if (!row.hidden_context) throw new TaskNotReadyError(taskId, 'it has no hidden context');
  const tools = TaskToolsSchema.safeParse(row.tools);
  if (!tools.success) {
    const where = tools.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new TaskNotReadyError(taskId, `its tools are not valid function specs (${where})`);
  }
  const names = tools.data.map((t) => t.function.name);
  if (names.includes(ASK_USER_TOOL_NAME)) {
    throw new TaskNotReadyError(taskId, `a tool is named "${ASK_USER_TOOL_NAME}", the built-in user channel`);
  }
  const duplicate = names.find((name, i) => names.indexOf(name) !== i);
  if (duplicate) throw new TaskNotReadyError(taskId, `two tools are named "${duplicate}"`);
  return { taskId, instruction: row.instruction, hiddenContext: row.hidden_context, tools: tools.data };
}
