/**
 * The test workflow of python-sandbox.test.ts, bundled on its own: runs programs one after another
 * through the `pythonTool` activity on a real worker, as a rollout's tool calls would.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { SandboxActivities } from '../../activities/sandbox/index.js';

const { pythonTool } = proxyActivities<SandboxActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 1 },
});

/** The tool messages of `programs`, in order. */
export async function SandboxedPrograms(programs: readonly string[], wallSeconds: number): Promise<string[]> {
  const contents: string[] = [];
  for (const code of programs) {
    const outcome = await pythonTool({
      arguments: JSON.stringify({ code }),
      caps: { wallSeconds, cpuSeconds: 2 },
    });
    contents.push(outcome.content);
  }
  return contents;
}
