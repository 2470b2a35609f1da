import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { getPool } from '../../activities/store/db.js';
import { DatasetImportError, importTasks, MAX_IMPORT_BYTES } from '../../activities/synthesis/import.js';
import { loadEnvironment } from '../../schemas/environment.js';
import { UsageError } from '../usage.js';
import type { Command } from './command.js';

/** `mockworld import <tasks.jsonl> [--id ID]`: stores tasks as a dataset a GrpoTraining spec trains on. */
export const importCommand: Command = {
  name: 'import',
  async run({ values, args, print }) {
    const file = args[0];
    if (!file) throw new UsageError('mockworld import needs a tasks.jsonl file');
    const id = values.id ?? `dataset-${path.basename(file, path.extname(file))}`;
    // Checked before reading: the whole file is read into memory.
    const { size } = await stat(file);
    if (size > MAX_IMPORT_BYTES)
      throw new DatasetImportError(`${file} holds ${size} bytes; import at most 64 MiB at a time (split it)`);
    const text = await readFile(file, 'utf8');
    const result = await importTasks(getPool(loadEnvironment().DATABASE_URL), id, file, text);
    print(
      `${result.tasks} tasks imported as dataset ${id}: train on them with dataset.synthesisRunId: ${id}`,
      result,
    );
    return 0;
  },
};
