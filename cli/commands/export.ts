import path from 'node:path';
import { exportEvaluationTrials } from '../../activities/evaluation/index.js';
import { getPool } from '../../activities/store/db.js';
import { datasetDirectoryName } from '../../activities/synthesis/export.js';
import { loadEnvironment } from '../../schemas/environment.js';
import { ExportFormatListSchema, ExportFormatSchema } from '../../schemas/export-formats.js';
import { exportRun, readReport } from '../run-commands.js';
import { UsageError } from '../usage.js';
import type { Command } from './command.js';

/**
 * `mockworld export <id> [--out DIR] [--format F,...]`: a synthesis run's dataset in the formats
 * asked for, or an evaluation run's trials with their trajectories.
 */
export const exportCommand: Command = {
  name: 'export',
  async run({ values, print, needId }) {
    const id = needId();
    if ((await readReport(id)).kind === 'Evaluation') {
      const env = loadEnvironment();
      const out = path.resolve(
        values.out ?? path.join(env.MOCKWORLD_HOME, 'evaluation', datasetDirectoryName(id)),
      );
      const result = await exportEvaluationTrials(getPool(env.DATABASE_URL), id, out);
      print(`${result.trials} trials (each with its trajectory) written to\n  ${result.file}`, result);
      return 0;
    }
    const formats = ExportFormatListSchema.safeParse(values.format);
    if (!formats.success)
      throw new UsageError(
        `--format takes ${ExportFormatSchema.options.join(', ')} or all, comma-separated; got "${values.format}"`,
      );
    const result = await exportRun(id, values.out, formats.data);
    const files = Object.values(result.files).map((file) => `  ${file}`);
    print(`${result.rows} tasks written to\n${files.join('\n')}`, result);
    return 0;
  },
};
