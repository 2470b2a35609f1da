import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { getPool, redactUrl } from '../activities/store/db.js';
import { writeStudyReport } from '../activities/study/report.js';
import { connectClient } from '../client/connect.js';
import { startRun } from '../client/runs.js';
import { CLI_INVOCATION } from '../deploy/paths.js';
import { stackUp } from '../deploy/stack.js';
import { trainerUp } from '../deploy/trainer-stack.js';
import { loadEnvironment } from '../schemas/environment.js';
import { temporalTarget } from '../services/temporal/connection.js';
import { connectWorker, createCpuWorker } from '../workers/cpu-worker.js';
import { readReport, waitForRun } from './run-commands.js';
import { renderReport } from './report-view.js';
import { readSpecFile } from './spec-file.js';

/** The README's main job: bring the stack up, serve a worker in-process, run a spec, report. */
export async function demo(specFile: string): Promise<number> {
  // The demo's worker is its own: the spec's folder is one of its data roots, so a spec written
  // next to its data runs wherever it lies. Set before the environment is first read (and cached).
  process.env.MOCKWORLD_DATA_ROOTS = [path.dirname(path.resolve(specFile)), process.env.MOCKWORLD_DATA_ROOTS]
    .filter(Boolean)
    .join(path.delimiter);
  const spec = await readSpecFile(specFile);
  // The demo prints its own progress; the SDK's per-worker INFO lines would drown it.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const env = loadEnvironment();
  const temporal = temporalTarget();
  await stackUp((line) => console.log(line), env, temporal);
  if (spec.kind === 'ScalingStudy' || spec.kind === 'GrpoTraining' || spec.kind === 'SftTraining')
    await trainerUp((line) => console.log(line), env);
  const connection = await connectWorker(temporal);
  const worker = await createCpuWorker(connection);
  const client = await connectClient();
  const outcome = worker.runUntil(async () => {
    const id = await startRun(client, spec);
    console.log(
      `\nstarted ${spec.kind} run ${id}; watch it at http://localhost:${env.TEMPORAL_UI_PORT}/namespaces/${temporal.namespace}/workflows/${id}`,
    );
    await waitForRun(client, id);
    return id;
  });
  const id = await outcome;
  await connection.close();
  const report = await readReport(id);
  console.log(`\n${renderReport(report)}`);
  if (report.kind === 'ScalingStudy') {
    const written = await writeStudyReport(getPool(env.DATABASE_URL), id);
    console.log(
      `\n${await readFile(written.reportPath, 'utf8')}\nreport and plots: ${path.dirname(written.reportPath)}`,
    );
  }
  const dataset = (report.summary as { dataset?: { tasksFile: string; verlFile: string } } | null)?.dataset;
  if (dataset) console.log(`\ndataset:    ${dataset.tasksFile}\n            ${dataset.verlFile}`);
  console.log(
    `statistics: ${CLI_INVOCATION} report ${id}  (PostgreSQL ${redactUrl(env.DATABASE_URL)}, table runs)`,
  );
  console.log(`the stack keeps running for the UI; stop it with ${CLI_INVOCATION} stack down`);
  return 0;
}
