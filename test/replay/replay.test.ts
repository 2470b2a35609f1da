import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

import { Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { MOCKWORLD_WORKFLOWS_PATH } from '../../workers/plugin.js';
import * as bundle from '../../workflows/index.js';
import { HISTORIES_DIR, type RecordedHistory } from '../../testkit/vitest/histories.js';

/** The workflow type a recorded history started as (its first event). */
function workflowTypeOf(recorded: RecordedHistory): string {
  const history = recorded.history as {
    events: { workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string } } }[];
  };
  const name = history.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
  if (!name) throw new Error(`history of ${recorded.workflowId} does not start with its workflow type`);
  return name;
}

describe('recorded workflow histories (workflows/README.md "Versioning")', () => {
  let histories: RecordedHistory[];
  beforeAll(async () => {
    const files = (await readdir(HISTORIES_DIR)).filter((f) => f.endsWith('.json')).sort();
    histories = await Promise.all(
      files.map(
        async (file) => JSON.parse(await readFile(path.join(HISTORIES_DIR, file), 'utf8')) as RecordedHistory,
      ),
    );
  });

  it('cover every workflow type the bundle serves, and a type it does not (its default)', () => {
    const recorded = new Set(histories.map(workflowTypeOf));
    const served = Object.keys(bundle).filter((name) => name !== 'default');
    expect(served).toContain('GrpoGroup'); // the import saw the bundle's exports
    expect(served.filter((type) => !recorded.has(type))).toEqual([]);
    expect([...recorded].filter((type) => !served.includes(type))).not.toEqual([]);
  });

  it('replay without nondeterminism against the current workflow code', async () => {
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
