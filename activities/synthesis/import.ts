import path from 'node:path';
import type pg from 'pg';
import { ExportedTaskSchema, instructionOf } from '../../schemas/exported-task.js';
import type { Rubric } from '../../schemas/synthesis-records.js';
import { ASK_USER_TOOL_NAME } from '../world/index.js';
import { taskIdOf } from './task-id.js';
import { checkToolset } from './tool-validation.js';
import { DatasetImportError } from './errors.js';

/** Problems named in an error at most; the rest are counted. */
const MAX_NAMED_PROBLEMS = 20;
/** Larger files are refused before reading. */
export const MAX_IMPORT_BYTES = 64 * 1024 * 1024;

export { DatasetImportError };

/** A task ready to insert. */
interface ImportedTask {
  readonly sourceTaskId: string;
  readonly personaId: string;
  readonly instruction: string;
  readonly tools: unknown[];
  readonly hiddenContext: string;
  readonly rubric: Rubric;
  readonly workflow: string[];
}

/** Problems of one line's tools, naming each tool by its place in the line. */
function toolProblems(tools: readonly unknown[]): { tools: unknown[]; problems: string[] } {
  // The export appends the mock world's own ask_user tool; the world adds it back itself.
  const own = tools.flatMap((tool, index) =>
    (tool as { function?: { name?: unknown } } | null)?.function?.name === ASK_USER_TOOL_NAME
      ? []
      : [{ tool, index }],
  );
  const check = checkToolset(own.map((t) => t.tool));
  if (check.ok) return { tools: check.tools, problems: [] };
  return {
    tools: [],
    problems: check.problems.map((p) =>
      p.replace(/^tools\[(\d+)\]/, (_, j) => `tools[${own[Number(j)]!.index}]`),
    ),
  };
}

/** Parses and checks every line; throws naming every bad one. */
export function parseExportedTasks(text: string): ImportedTask[] {
  const tasks: ImportedTask[] = [];
  const problems: string[] = [];
  text
    .replace(/^\uFEFF/, '')
    .split('\n')
    .forEach((line, i) => {
      if (!line.trim()) return;
      const where = `line ${i + 1}`;
      let json: unknown;
      try {
        json = JSON.parse(line);
      } catch (error) {
        problems.push(`${where}: not JSON (${(error as Error).message})`);
        return;
      }
      const parsed = ExportedTaskSchema.safeParse(json);
      if (!parsed.success) {
        for (const issue of parsed.error.issues)
          problems.push(`${where}: ${issue.path.join('.') || '(line)'}: ${issue.message}`);
        return;
      }
      const task = parsed.data;
      const checked = toolProblems(task.tools);
      if (checked.problems.length) {
        problems.push(...checked.problems.map((p) => `${where}: ${p}`));
        return;
      }
      tasks.push({
        sourceTaskId: task.task_id,
        personaId: task.persona_id ?? 'imported',
        instruction: instructionOf(task.prompt)!,
        tools: checked.tools,
        hiddenContext: task.hidden_context,
        rubric: task.rubric,
        workflow: task.workflow ?? [],
      });
    });
  if (problems.length) {
    const named = problems.slice(0, MAX_NAMED_PROBLEMS);
    const more = problems.length - named.length;
    throw new DatasetImportError(
      `Cannot import the tasks (${problems.length} problem(s)):\n  - ${named.join('\n  - ')}` +
        (more > 0 ? `\n  … and ${more} more` : ''),
    );
  }
  if (tasks.length === 0) throw new DatasetImportError('Cannot import the tasks: the file holds none');
  return tasks;
}

/**
 * Stores exported tasks as the kept tasks of dataset `datasetId`, so a GrpoTraining spec can
 * train on them (`dataset.synthesisRunId: <datasetId>`), with a `runs` row of kind Dataset that
 * keeps the id from any other run (`mockworld report` shows it). One transaction: all or nothing.
 * An id already taken by a run or by tasks is refused rather than mixed.
 */
export async function importTasks(
  pool: pg.Pool,
  datasetId: string,
  file: string,
  text: string,
): Promise<{ datasetId: string; tasks: number }> {
  const tasks = parseExportedTasks(text);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const summary = JSON.stringify({ tasks: tasks.length, importedFrom: path.basename(file) });
    const claimed = await client.query(
      `INSERT INTO runs (run_id, kind, spec, status, summary) VALUES ($1, 'Dataset', $2, 'completed', $2)
       ON CONFLICT (run_id) DO NOTHING`,
      [datasetId, summary],
    );
    const held = await client.query('SELECT count(*)::int AS n FROM tasks WHERE run_id = $1', [datasetId]);
    if (claimed.rowCount === 0 || held.rows[0].n > 0)
      throw new DatasetImportError(
        `${datasetId} is already the id of a run or a dataset; choose another --id`,
      );
    for (const [idx, task] of tasks.entries()) {
      await client.query(
        `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage, workflow, tools, forbidden, instruction,
                            hidden_context, rubric, provenance)
         VALUES ($1, $2, $3, $4, 'kept', $5, $6, $7, $8, $9, $10, $11)`,
        [
          taskIdOf(datasetId, idx),
          datasetId,
          idx,
          task.personaId,
          JSON.stringify(task.workflow),
          JSON.stringify(task.tools),
          JSON.stringify(task.rubric.forbidden),
          task.instruction,
          task.hiddenContext,
          JSON.stringify(task.rubric),
          JSON.stringify({ importedFrom: path.basename(file), sourceTaskId: task.sourceTaskId }),
        ],
      );
    }
    await client.query('COMMIT');
    return { datasetId, tasks: tasks.length };
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}
