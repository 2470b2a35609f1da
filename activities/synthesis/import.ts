import path from 'node:path';
import type pg from 'pg';
import { z } from 'zod';
import { RubricSchema } from '../../schemas/synthesis-records';
import { ASK_USER_TOOL_NAME } from '../world';
import { checkToolset } from './tool-validation';

/** What training needs from one line of an exported `tasks.jsonl` (README "Dataset format"). */
const ExportedTaskSchema = z.object({
  task_id: z.string().min(1).max(500),
  persona_id: z.string().min(1).max(500).optional(),
  prompt: z
    .array(z.object({ role: z.string(), content: z.string().nullish() }).loose())
    .refine((messages) => messages.some((m) => m.role === 'user' && m.content), 'needs a user message'),
  tools: z.array(z.unknown()),
  hidden_context: z.string(),
  rubric: RubricSchema,
  workflow: z.array(z.string()).optional(),
});

/** Lines named in an error at most; the rest are counted. */
const MAX_NAMED_LINES = 20;

/** Thrown when the file has bad lines (each named) or the dataset id is taken; nothing is written. */
export class DatasetImportError extends Error {
  override readonly name = 'DatasetImportError';
}

/** A task ready to insert: the user's instruction is the prompt's last user message. */
interface ImportedTask {
  readonly sourceTaskId: string;
  readonly personaId: string;
  readonly instruction: string;
  readonly tools: unknown[];
  readonly hiddenContext: string;
  readonly rubric: z.infer<typeof RubricSchema>;
  readonly workflow: string[];
}

/** Parses and checks every line; throws naming every bad one. */
export function parseExportedTasks(text: string): ImportedTask[] {
  const tasks: ImportedTask[] = [];
  const problems: string[] = [];
  text.split('\n').forEach((line, i) => {
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
    // The export appends the mock world's own ask_user tool; the world adds it back itself.
    const check = checkToolset(
      task.tools.filter(
        (t) => (t as { function?: { name?: unknown } })?.function?.name !== ASK_USER_TOOL_NAME,
      ),
    );
    if (!check.ok) {
      problems.push(...check.problems.map((p) => `${where}: ${p}`));
      return;
    }
    tasks.push({
      sourceTaskId: task.task_id,
      personaId: task.persona_id ?? 'imported',
      instruction: task.prompt.filter((m) => m.role === 'user').at(-1)!.content!,
      tools: check.tools,
      hiddenContext: task.hidden_context,
      rubric: task.rubric,
      workflow: task.workflow ?? [],
    });
  });
  if (problems.length) {
    const named = problems.slice(0, MAX_NAMED_LINES);
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
 * train on them (`dataset.synthesisRunId: <datasetId>`). One transaction: all or nothing. An id
 * that already holds tasks is refused rather than mixed.
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
    const taken = await client.query('SELECT count(*)::int AS n FROM tasks WHERE run_id = $1', [datasetId]);
    if (taken.rows[0].n > 0)
      throw new DatasetImportError(
        `${datasetId} already holds ${taken.rows[0].n} tasks; choose another --id`,
      );
    for (const [idx, task] of tasks.entries()) {
      await client.query(
        `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage, workflow, tools, forbidden, instruction,
                            hidden_context, rubric, provenance)
         VALUES ($1, $2, $3, $4, 'kept', $5, $6, $7, $8, $9, $10, $11)`,
        [
          `${datasetId}-task-${String(idx).padStart(5, '0')}`,
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
