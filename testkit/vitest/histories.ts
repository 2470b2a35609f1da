import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';

const exec = promisify(execFile);

/** Where recorded workflow histories live; the replay test replays every file here. */
export const HISTORIES_DIR = path.join(REPO_ROOT, 'test', 'histories');

/** A recorded history file: the workflow id and its history in the Temporal CLI's JSON format. */
export interface RecordedHistory {
  readonly workflowId: string;
  readonly history: unknown;
}

/**
 * With MOCKWORLD_RECORD_HISTORIES=1, saves the history of a finished workflow of the shared test
 * server as `test/histories/<name>.json`, in the Temporal CLI's JSON format (commit it after a
 * deliberate workflow change). Otherwise a no-op.
 */
export async function recordHistory(workflowId: string, name: string, runId?: string): Promise<void> {
  if (process.env.MOCKWORLD_RECORD_HISTORIES !== '1') return;
  const { stdout } = await exec(
    inject('temporalCli'),
    [
      'workflow',
      'show',
      '--workflow-id',
      workflowId,
      // One run of a chain that continued as new (its first, say); default: the latest.
      ...(runId ? ['--run-id', runId] : []),
      '--address',
      inject('temporalAddress'),
      '--output',
      'json',
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  await mkdir(HISTORIES_DIR, { recursive: true });
  // Replay needs the original workflow id: child workflow ids are derived from it.
  const recorded: RecordedHistory = { workflowId, history: JSON.parse(stdout) };
  await writeFile(path.join(HISTORIES_DIR, `${name}.json`), `${JSON.stringify(recorded)}\n`);
}
