#!/usr/bin/env node
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { closePools, getPool } from '../activities/store/db.js';
import { exportEvaluationTrials } from '../activities/evaluation/index.js';
import { indexCorpus } from '../activities/search/index.js';
import { datasetDirectoryName } from '../activities/synthesis/export.js';
import { writeStudyReport } from '../activities/study/report.js';
import { DatasetImportError, importTasks, MAX_IMPORT_BYTES } from '../activities/synthesis/import.js';
import { cancelRun, describeRun, queryRun, setBudget, signalRun, startRun } from '../client/runs.js';
import { connectClient } from '../client/connect.js';
import { REPO_ROOT } from '../deploy/paths.js';
import { stackDown, stackStatus, stackUp } from '../deploy/stack.js';
import { loadEnvironment } from '../schemas/environment.js';
import { temporalTarget } from '../services/temporal/connection.js';
import { ExportFormatListSchema, ExportFormatSchema } from '../schemas/export-formats.js';
import { SpecValidationError } from '../schemas/spec-error.js';
import { iterationTasksQuery, latestMetricsQuery, stopSignal } from '../workflows/grpo-controls.js';
import { cellStatesQuery } from '../workflows/study-controls.js';
import { runCpuWorker } from '../workers/cpu-worker.js';
import { demo } from './demo.js';
import { renderEvaluationReport } from './evaluation-view.js';
import { renderJudgeAuditReport } from './judge-audit-view.js';
import { taskStatus, withRunningStages } from './task-status.js';
import { renderReport } from './report-view.js';
import { exportRun, readReport, waitForRun, writeRewardPlot } from './run-commands.js';
import { codecServer, modelGateway, viewer } from './service-commands.js';
import { readSpecFile } from './spec-file.js';
import { renderSummary } from './summary-view.js';
import { renderRecord, renderTable } from './table.js';
import { UsageError } from './usage.js';
import { worldService } from './world-command.js';

const USAGE = `mockworld: durable ML pipelines on Temporal

  mockworld stack up|down|status        local Temporal dev server (+ UI :8233), PostgreSQL schema, embedded model
  mockworld worker [--task-queue Q]     run a CPU worker (workflows + activities) until Ctrl-C
  mockworld start <spec.yaml|json> [--id ID] [--wait]
                                        validate a spec, then start its run (workflow type = spec kind)
  mockworld status <id> [--task N | --cells | --tasks | --metrics]
                                        state, progress and counts of a run (or the stage of task N,
                                        the state of every cell of a scaling study, or of a training
                                        run the status of each task of the iteration, the metrics of
                                        the latest finished one)
  mockworld pause <id> | resume <id>    stop/continue starting new work (running work finishes)
  mockworld budget <id> <usd>           set a run's budget for priced model calls; a run paused at its
                                        budget resumes when the new one is above what it spent
  mockworld stop <id>                   GRPO / SFT: finish the iteration (step), keep its checkpoint,
                                        complete
  mockworld cancel <id>                 cancel a run; it records 'cancelled'
  mockworld report <id>                 stored statistics and model usage by role; for a training
                                        run its metrics per iteration (SFT: its loss per step); for
                                        a scaling study its fitted report (Markdown tables, SVG plots)
  mockworld export <id> [--out DIR] [--format F,...]
                                        write a synthesis run's dataset: jsonl (tasks.jsonl, verl.jsonl;
                                        the default), verl-parquet (verl's RL layout), hf (Hugging Face
                                        datasets: Parquet shards + dataset card), sft (demonstrations
                                        as chats with tool calls), or all; of an Evaluation run, every
                                        trial with its trajectory (trials.jsonl)
  mockworld import <tasks.jsonl> [--id ID]
                                        store exported tasks (or your own, same format) as a dataset
                                        a GrpoTraining spec trains on (dataset.synthesisRunId: ID)
  mockworld search-index <corpus.jsonl> [--collection NAME]
                                        index {"id", "title", "text", "url"} documents for the offline
                                        search tool (search: { kind: offline, collection: NAME })
  mockworld demo [spec]                 the main job: stack up, a worker, a run on the embedded model
  mockworld codec-server [--port N] [--host H] [--origin URL]...
                                        decrypt payloads for the Temporal UI (needs MOCKWORLD_PAYLOAD_KEY)
  mockworld world [--config world.yaml] [--port N] [--host H]
                                        the world service for external RL frameworks (verl): sessions,
                                        task tools, ask_user and the judge over HTTP (127.0.0.1:11438)
  mockworld gateway [--port N] [--host H]
                                        model gateway: finishes and records every paid model call even
                                        when the worker that asked dies (workers: MOCKWORLD_MODEL_GATEWAY_URL)
  mockworld view [--port N] [--host H]  results viewer in the browser (runs, tasks, transcripts, curves,
                                        fits; read-only; 127.0.0.1:8234 unless told otherwise)

  --json   machine-readable output for scripts`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      wait: { type: 'boolean', default: false },
      id: { type: 'string' },
      task: { type: 'string' },
      cells: { type: 'boolean', default: false },
      tasks: { type: 'boolean', default: false },
      metrics: { type: 'boolean', default: false },
      out: { type: 'string' },
      format: { type: 'string', default: 'jsonl' },
      config: { type: 'string' },
      collection: { type: 'string' },
      'task-queue': { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      origin: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [command, ...rest] = positionals;
  const print = (human: string, machine: unknown) =>
    console.log(values.json ? JSON.stringify(machine, null, 2) : human);
  const needId = () => {
    const id = rest[0];
    if (!id) throw new UsageError(`mockworld ${command} needs a workflow id`);
    return id;
  };

  if (values.help || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  switch (command) {
    case 'stack': {
      const action = rest[0];
      if (action === 'up') await stackUp((line) => console.log(line), loadEnvironment(), temporalTarget());
      else if (action === 'down') await stackDown((line) => console.log(line));
      else if (action === 'status') {
        const rows = await stackStatus(loadEnvironment(), temporalTarget());
        print(renderTable(rows as unknown as Record<string, unknown>[]), rows);
        return rows.every((row) => row.state === 'up') ? 0 : 1;
      } else throw new UsageError('mockworld stack needs up, down or status');
      return 0;
    }
    case 'worker': {
      console.error(
        `worker polling ${values['task-queue'] ?? loadEnvironment().MOCKWORLD_TASK_QUEUE}; Ctrl-C to stop`,
      );
      await runCpuWorker({ taskQueue: values['task-queue'] });
      return 0;
    }
    case 'start': {
      const file = rest[0];
      if (!file) throw new UsageError('mockworld start needs a spec file');
      const spec = await readSpecFile(file);
      const client = await connectClient();
      const id = await startRun(client, spec, values.id);
      if (!values.json) console.log(`started ${spec.kind} run ${id}`);
      if (!values.wait) {
        if (values.json) print('', { workflowId: id });
        return 0;
      }
      const result = await waitForRun(client, id);
      print(renderSummary(result as Record<string, unknown>), { workflowId: id, result });
      return 0;
    }
    case 'status': {
      if (values.task !== undefined) {
        const status = await taskStatus(needId(), values.task);
        print(status.text, status.json);
        return 0;
      }
      if (values.cells) {
        const id = needId();
        const states = await queryRun(await connectClient(), id, cellStatesQuery);
        const rows = Object.entries(states).map(([cell, state]) => ({ cell, state }));
        print(renderTable(rows), { workflowId: id, cells: states });
        return 0;
      }
      if (values.tasks) {
        const id = needId();
        const tasks = await queryRun(await connectClient(), id, iterationTasksQuery);
        const rows = Object.entries(tasks).map(([task, status]) => ({ task, status }));
        print(renderTable(rows), { workflowId: id, tasks });
        return 0;
      }
      if (values.metrics) {
        const id = needId();
        const metrics = await queryRun(await connectClient(), id, latestMetricsQuery);
        print(Object.keys(metrics).length ? renderSummary(metrics) : 'no iteration has finished yet', {
          workflowId: id,
          metrics,
        });
        return 0;
      }
      const overview = await describeRun(await connectClient(), needId());
      if (overview.status && overview.type === 'Synthesis')
        overview.status.counts = await withRunningStages(
          getPool(loadEnvironment().DATABASE_URL),
          overview.workflowId,
          overview.status.counts,
        );
      const { status, recorded, statusError, ...temporal } = overview;
      const flat = status
        ? {
            ...temporal,
            state: status.state,
            progress: `${status.done}/${status.total}`,
            stage: status.stage,
            // One field, not one per stage: a count named `started` would hide the start time.
            counts: Object.entries(status.counts)
              .map(([stage, n]) => `${stage} ${n}`)
              .join(', '),
          }
        : {
            ...temporal,
            // A closed run's own record may predate its end (a failed or terminated run never
            // recorded one), so Temporal's status decides.
            state:
              temporal.temporalStatus === 'RUNNING'
                ? (recorded.state ?? '')
                : temporal.temporalStatus.toLowerCase(),
            progress: recorded.progress === undefined ? '' : `${Math.round(recorded.progress * 100)}%`,
            note: `progress as the run last recorded it (search attributes); stage and counts: ${statusError}`,
          };
      print(renderRecord(flat), overview);
      return 0;
    }
    case 'pause':
    case 'resume': {
      const id = needId();
      await signalRun(await connectClient(), id, command);
      print(`${command} sent to ${id}`, { workflowId: id, signal: command });
      return 0;
    }
    case 'budget': {
      const id = needId();
      const usd = Number(rest[1]);
      if (!(Number.isFinite(usd) && usd > 0))
        throw new UsageError('mockworld budget needs a run id and an amount in USD > 0');
      await setBudget(await connectClient(), id, usd);
      print(`budget of ${id} set to $${usd}`, { workflowId: id, budgetUsd: usd });
      return 0;
    }
    case 'stop': {
      const id = needId();
      await (await connectClient()).workflow.getHandle(id).signal(stopSignal);
      print(`stop sent to ${id}: it completes after the current iteration`, {
        workflowId: id,
        signal: 'stop',
      });
      return 0;
    }
    case 'cancel': {
      const id = needId();
      await cancelRun(await connectClient(), id);
      print(`cancellation requested for ${id}`, { workflowId: id, cancelled: true });
      return 0;
    }
    case 'report': {
      const report = await readReport(needId());
      if (report.kind === 'Evaluation') {
        const pool = getPool(loadEnvironment().DATABASE_URL);
        const view = await renderEvaluationReport(pool, report.runId, report.status, report.summary);
        print(view.text, { ...report, ...view.json });
        return 0;
      }
      if (report.kind === 'JudgeAudit') {
        print(await renderJudgeAuditReport(report.runId, report.status, report.summary), report);
        return 0;
      }
      if (report.kind === 'ScalingStudy') {
        // Re-fitted from the stored cells, so it also shows a study that is still training.
        const written = await writeStudyReport(getPool(loadEnvironment().DATABASE_URL), report.runId);
        const markdown = await readFile(written.reportPath, 'utf8');
        print(`${markdown}\nreport and plots: ${path.dirname(written.reportPath)}`, {
          ...report,
          ...written,
        });
        return 0;
      }
      if (report.iterations?.length && report.kind !== 'SftTraining') {
        // The figure is an extra: a report must not fail because MOCKWORLD_HOME is not writable.
        const plot = await writeRewardPlot(report.runId, report.iterations).catch(
          (error: unknown) => `not written (${error instanceof Error ? error.message : error})`,
        );
        print(`${renderReport(report)}\n\nreward curve: ${plot}`, { ...report, plot });
        return 0;
      }
      print(renderReport(report), report);
      return 0;
    }
    case 'export': {
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
    }
    case 'import': {
      const file = rest[0];
      if (!file) throw new UsageError('mockworld import needs a tasks.jsonl file');
      const id = values.id ?? `dataset-${path.basename(file, path.extname(file))}`;
      const { size } = await stat(file);
      if (size > MAX_IMPORT_BYTES)
        throw new DatasetImportError(
          `${file} holds ${size} bytes; import at most 64 MiB at a time (split it)`,
        );
      const text = await readFile(file, 'utf8');
      const result = await importTasks(getPool(loadEnvironment().DATABASE_URL), id, file, text);
      print(
        `${result.tasks} tasks imported as dataset ${id}: train on them with dataset.synthesisRunId: ${id}`,
        result,
      );
      return 0;
    }
    case 'search-index': {
      const file = rest[0];
      if (!file) throw new UsageError('mockworld search-index needs a corpus JSONL file');
      const collection = values.collection ?? path.basename(file, path.extname(file));
      const result = await indexCorpus(
        getPool(loadEnvironment().DATABASE_URL),
        collection,
        path.resolve(file),
      );
      print(
        result.changed
          ? `${result.documents} documents indexed as collection ${collection}: search: { kind: offline, collection: ${collection} }`
          : `collection ${collection} already holds this file (${result.documents} documents); nothing written`,
        result,
      );
      return 0;
    }
    case 'demo':
      return demo(rest[0] ?? path.join(REPO_ROOT, 'examples', 'synthesis-demo.yaml'));
    case 'codec-server':
      return codecServer(values);
    case 'gateway':
      return modelGateway(values);
    case 'world':
      return worldService(values);
    case 'view':
      return viewer(values);
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2))
  .then(async (code) => {
    await closePools();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    await closePools();
    if (error instanceof UsageError) {
      console.error(`${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    if (error instanceof SpecValidationError || error instanceof DatasetImportError) {
      console.error(error.message);
      process.exit(2);
    }
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
