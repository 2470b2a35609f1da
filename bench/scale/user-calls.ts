import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Command, CommandOptions } from '../../cli/commands/command.js';
import { exportCommand } from '../../cli/commands/export.js';
import { reportCommand } from '../../cli/commands/report.js';
import { statusCommand } from '../../cli/commands/status.js';
import { startViewer } from '../../services/viewer/server.js';
import { summarize, type Summary } from '../measure/repeats.js';

/** One thing a user does during or after a run, timed. */
export interface UserCall {
  readonly name: string;
  readonly ms: Summary;
  /** Export only: the growth of this process's resident set while it ran (bounded memory). */
  readonly rssGrowthMiB?: Summary;
}

const OPTIONS: CommandOptions = {
  json: true,
  wait: false,
  cells: false,
  tasks: false,
  metrics: false,
  format: 'jsonl',
  'local-database': false,
};

/** Runs a CLI command in this process (what `mockworld <command>` does after Node starts). */
async function runCommand(command: Command, args: string[], values: Partial<CommandOptions> = {}) {
  const code = await command.run({
    values: { ...OPTIONS, ...values },
    args,
    print: () => undefined,
    needId: () => args[0]!,
  });
  if (code !== 0) throw new Error(`${command.name} ${args.join(' ')} exited with ${code}`);
}

/** `action` run `repeats` times: the median and range of its wall time in ms. */
export async function timed(repeats: number, action: () => Promise<void>): Promise<Summary> {
  const ms: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await action();
    ms.push(performance.now() - t0);
  }
  return summarize(ms);
}

/** The peak growth of this process's RSS while `action` runs, sampled every 20 ms. */
async function rssGrowth(action: () => Promise<void>): Promise<number> {
  const base = process.memoryUsage.rss();
  let peak = base;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  try {
    await action();
  } finally {
    clearInterval(sampler);
  }
  return (Math.max(peak, process.memoryUsage.rss()) - base) / 2 ** 20;
}

async function fetchPage(url: string): Promise<void> {
  const response = await fetch(url);
  const body = await response.text();
  if (!response.ok) throw new Error(`GET ${url}: ${response.status} ${body.slice(0, 200)}`);
}

/**
 * Times the calls a user makes on a Synthesis run of `tasks` tasks: `status`, `status --task N`,
 * `report`, `export` (JSONL, its memory growth too) and the viewer's pages (runs list, the run,
 * one task). Needs DATABASE_URL and TEMPORAL_ADDRESS in the environment, as the CLI does.
 */
export async function timeUserCalls(runId: string, tasks: number, repeats = 3): Promise<UserCall[]> {
  const middle = String(Math.floor(tasks / 2));
  const out = await mkdtemp(path.join(os.tmpdir(), 'mockworld-scale-export-'));
  const viewer = await startViewer({
    databaseUrl: process.env.DATABASE_URL!,
    port: 0,
    ui: { url: 'http://localhost:8233', namespace: 'default' },
  });
  const taskId = `${runId}-task-${middle.padStart(5, '0')}`;
  try {
    const calls: UserCall[] = [
      { name: 'status', ms: await timed(repeats, () => runCommand(statusCommand, [runId])) },
      {
        name: `status --task ${middle}`,
        ms: await timed(repeats, () => runCommand(statusCommand, [runId], { task: middle })),
      },
      { name: 'report', ms: await timed(repeats, () => runCommand(reportCommand, [runId])) },
      { name: 'viewer: runs', ms: await timed(repeats, () => fetchPage(`${viewer.url}/`)) },
      { name: 'viewer: run', ms: await timed(repeats, () => fetchPage(`${viewer.url}/runs/${runId}`)) },
      { name: 'viewer: task', ms: await timed(repeats, () => fetchPage(`${viewer.url}/tasks/${taskId}`)) },
    ];
    const growth: number[] = [];
    const ms = await timed(repeats, async () => {
      growth.push(await rssGrowth(() => runCommand(exportCommand, [runId], { out })));
    });
    calls.push({ name: 'export (jsonl)', ms, rssGrowthMiB: summarize(growth) });
    return calls;
  } finally {
    await viewer.close();
    await rm(out, { recursive: true, force: true });
  }
}
