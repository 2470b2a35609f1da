import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import type { ExportFormat } from '../../schemas/export-formats.js';
import type { SynthesisSpec } from '../../schemas/synthesis-spec.js';
import { DatasetExportError } from '../synthesis/errors.js';
import { exportDataset } from '../synthesis/export.js';
import { exportReasoningProblems } from '../synthesis/reasoning-export.js';
import { agentSystemPrompt } from '../world/index.js';
import { renderDatasetCard, type CardProvenance } from './dataset-card.js';
import { countKeptTasks, keptTasks, type KeptTask } from './kept-tasks.js';
import { hfRow, sftRecords, verlParquetRow, type ExportContext } from './layouts.js';
import { HF_LAYOUT, VERL_LAYOUT, writeParquet } from './parquet.js';

/** What an export wrote: the folder, the kept tasks it holds, and each file by its name there. */
export interface FormatsExport {
  readonly directory: string;
  readonly rows: number;
  readonly files: Record<string, string>;
}

/** Rows per Parquet shard of the Hugging Face layout (the Hub's viewer likes shards of this order). */
export const HF_SHARD_ROWS = 10_000;

interface RunRow {
  readonly kind: string;
  readonly status: string;
  readonly spec: SynthesisSpec;
  readonly summary: Record<string, unknown> | null;
}

async function readRun(pool: pg.Pool, runId: string): Promise<RunRow> {
  const { rows } = await pool.query<RunRow>(
    'SELECT kind, status, spec, summary FROM runs WHERE run_id = $1',
    [runId],
  );
  if (!rows[0]) throw new DatasetExportError(runId, 'no run of that id is registered in the runs table');
  if (rows[0].kind !== 'Synthesis')
    throw new DatasetExportError(runId, `it is a ${rows[0].kind} run; only Synthesis runs have a dataset`);
  return rows[0];
}

async function* mapRows<T>(tasks: AsyncIterable<KeptTask>, row: (task: KeptTask) => T): AsyncGenerator<T> {
  for await (const task of tasks) yield row(task);
}

/** Up to `n` items of a shared iterator (the rest stay for the next shard). */
async function* take<T>(source: AsyncIterator<T>, n: number): AsyncGenerator<T> {
  for (let i = 0; i < n; i++) {
    const next = await source.next();
    if (next.done) return;
    yield next.value;
  }
}

/**
 * Writes a synthesis run's kept tasks to `directory` in each of `formats` (docs/synthesis.md "Export
 * formats"). Each format reads the tasks once, in batches, so memory stays flat.
 */
export async function exportRunFormats(
  pool: pg.Pool,
  runId: string,
  directory: string,
  formats: readonly ExportFormat[],
): Promise<FormatsExport> {
  const run = await readRun(pool, runId);
  const context: ExportContext = { runId, agentSystemPrompt: agentSystemPrompt(run.spec.templates) };
  await mkdir(directory, { recursive: true });
  const files: Record<string, string> = {};
  let rows = await countKeptTasks(pool, runId);

  for (const format of formats) {
    if (format === 'jsonl') {
      const written = await exportDataset(pool, runId, directory, context.agentSystemPrompt);
      Object.assign(files, { 'tasks.jsonl': written.tasksFile, 'verl.jsonl': written.verlFile });
      // A run with a reasoning section: its kept problems too (docs/reasoning.md "Reasoning problems").
      if (run.spec.reasoning)
        files['reasoning.jsonl'] = (await exportReasoningProblems(pool, runId, directory)).file;
      rows = written.rows;
    } else if (format === 'verl-parquet') {
      const file = path.join(directory, 'verl.parquet');
      rows = await writeParquet(
        file,
        VERL_LAYOUT,
        mapRows(keptTasks(pool, runId), (t) => verlParquetRow(t, context)),
      );
      files['verl.parquet'] = file;
    } else if (format === 'hf') {
      Object.assign(files, await writeHfLayout(pool, run, runId, path.join(directory, 'hf'), context));
    } else {
      const file = path.join(directory, 'sft.jsonl');
      const out = await open(file, 'w');
      try {
        for await (const task of keptTasks(pool, runId))
          for (const record of sftRecords(task)) await out.write(`${JSON.stringify(record)}\n`);
      } finally {
        await out.close();
      }
      files['sft.jsonl'] = file;
    }
  }
  return { directory, rows, files };
}

/** The Hugging Face datasets layout: `data/train-0000k-of-0000n.parquet` and `README.md`. */
async function writeHfLayout(
  pool: pg.Pool,
  run: RunRow,
  runId: string,
  directory: string,
  context: ExportContext,
): Promise<Record<string, string>> {
  const total = await countKeptTasks(pool, runId);
  const shardCount = Math.max(1, Math.ceil(total / HF_SHARD_ROWS));
  await mkdir(path.join(directory, 'data'), { recursive: true });
  const models: CardProvenance['models'] = {};
  const tasks = keptTasks(pool, runId);
  const rows = mapRows(tasks, (task) => {
    // The models each task resolved (endpoint defaults applied), for the card.
    const byRole = (task.provenance as { models?: CardProvenance['models'] } | null)?.models ?? {};
    for (const [role, model] of Object.entries(byRole)) models[role] ??= model;
    return hfRow(task, context);
  });
  const shards: string[] = [];
  let written = 0;
  for (let k = 0; k < shardCount; k++) {
    const name = `data/train-${String(k).padStart(5, '0')}-of-${String(shardCount).padStart(5, '0')}.parquet`;
    written += await writeParquet(path.join(directory, name), HF_LAYOUT, take(rows, HF_SHARD_ROWS));
    shards.push(name);
  }
  const card = path.join(directory, 'README.md');
  const out = await open(card, 'w');
  try {
    await out.write(
      renderDatasetCard(HF_LAYOUT, {
        runId,
        kind: run.kind,
        status: run.status,
        spec: run.spec as unknown as Record<string, unknown>,
        summary: run.summary,
        models,
        rows: written,
        shards,
      }),
    );
  } finally {
    await out.close();
  }
  return Object.fromEntries([
    ...shards.map((s) => [`hf/${s}`, path.join(directory, s)]),
    ['hf/README.md', card],
  ]);
}
