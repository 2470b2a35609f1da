import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { MOCKWORLD_WORKFLOWS_PATH } from '../../workers/plugin.js';
import { HISTORIES_DIR, type RecordedHistory } from '../../testkit/vitest/histories.js';

describe('recorded workflow histories', () => {
  it('replay without nondeterminism against the current workflow code', async () => {
    const files = (await readdir(HISTORIES_DIR)).filter((f) => f.endsWith('.json')).sort();
    expect(files.length).toBeGreaterThanOrEqual(3);
    const histories = await Promise.all(
      files.map(
        async (file) => JSON.parse(await readFile(path.join(HISTORIES_DIR, file), 'utf8')) as RecordedHistory,
      ),
    );
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories(
      { workflowsPath: MOCKWORLD_WORKFLOWS_PATH },
      histories,
    )) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
  });
});
