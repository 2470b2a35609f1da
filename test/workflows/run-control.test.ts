import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { budgetSignal, pauseSignal, resumeSignal, statusQuery } from '../../workflows/controls.js';
import { BUDGET_MEMO } from '../../workflows/run-control.js';
import { createTimeSkippingEnv } from '../../testkit/time-skipping.js';
import { judgeStanding } from '../../schemas/judge-controls.js';

/**
 * RunControl, the pause / resume / budget logic every pipeline shares, under Temporal's
 * time-skipping test server: hours of workflow time in milliseconds, activity doubles for the
 * ledger, no sleeps. The real-server tests (grpo-training, evaluation, budget, cli) keep proving
 * the same controls end to end through real runs.
 */
describe('RunControl under time skipping', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await createTimeSkippingEnv(inject('temporalTestServer'));
  });
  afterAll(async () => {
    await env?.teardown();
  });

  /** Runs `body` with a worker for ControlledUnits whose ledger activities are `activities`. */
  async function withWorker<T>(
    activities: {
      runSpend(input: { runId: string }): Promise<{ costUsd: number; calls: number }>;
      recordRunPause(input: { runId: string; reason: string | null }): Promise<void>;
    },
    body: (taskQueue: string) => Promise<T>,
  ): Promise<T> {
    const taskQueue = `run-control-${randomBytes(4).toString('hex')}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: fileURLToPath(new URL('./run-control.workflows.ts', import.meta.url)),
      activities,
    });
    return worker.runUntil(body(taskQueue));
  }
  const noLedger = {
    runSpend: async () => ({ costUsd: 0, calls: 0 }),
    recordRunPause: async () => undefined,
  };

  it('holds at its next safe point through hours of paused time, and goes on when resumed', async () => {
    await withWorker(noLedger, async (taskQueue) => {
      const handle = await env.client.workflow.start('ControlledUnits', {
        args: [4],
        taskQueue,
        workflowId: `paused-${randomBytes(4).toString('hex')}`,
      });
      await env.sleep('15 minutes'); // unit 1 done, unit 2 under way
      expect(await handle.query(statusQuery)).toMatchObject({ state: 'running', done: 1, total: 4 });
      await handle.signal(pauseSignal);
      await env.sleep('5 hours');
      // The unit under way finished; no new one began.
      expect(await handle.query(statusQuery)).toMatchObject({ state: 'paused', done: 2 });
      await handle.signal(pauseSignal); // idempotent
      await handle.signal(resumeSignal);
      expect(await handle.result()).toBe(4);
      expect(await handle.query(statusQuery)).toMatchObject({ state: 'completed', done: 4 });
    });
  });

  it('pauses itself when the ledger reaches the budget, says why, and goes on when the budget is raised', async () => {
    const pauses: (string | null)[] = [];
    let checks = 0;
    const ledger = {
      // Each unit costs $0.40: the k-th check before a unit finds k units paid for.
      runSpend: async () => ({ costUsd: 0.4 * checks++, calls: checks }),
      recordRunPause: async ({ reason }: { reason: string | null }) => {
        pauses.push(reason);
      },
    };
    await withWorker(ledger, async (taskQueue) => {
      const handle = await env.client.workflow.start('ControlledUnits', {
        args: [4],
        taskQueue,
        workflowId: `budget-${randomBytes(4).toString('hex')}`,
        memo: { [BUDGET_MEMO]: 1 },
      });
      await env.sleep('2 hours');
      const paused = await handle.query(statusQuery);
      expect(paused).toMatchObject({ state: 'paused', done: 3 });
      expect(paused.stage).toMatch(
        /^budget reached: spent \$1\.20 of \$1\.00; raise it with `mockworld budget /,
      );
      expect(pauses).toEqual([paused.stage]);

      await handle.signal(budgetSignal, 0); // not a budget: ignored, still paused
      await handle.signal(budgetSignal, 5);
      expect(await handle.result()).toBe(4);
      expect(pauses).toEqual([paused.stage, null]); // and recorded as running again
    });
  });
  it('pauses itself for a named reason, holds through a budget raise, and goes on once resumed', async () => {
    const pauses: (string | null)[] = [];
    const ledger = {
      runSpend: async () => ({ costUsd: 0, calls: 0 }),
      recordRunPause: async ({ reason }: { reason: string | null }) => {
        pauses.push(reason);
      },
    };
    const reason = 'judge unreliable: it graded 3 of 6 control answers right';
    await withWorker(ledger, async (taskQueue) => {
      const handle = await env.client.workflow.start('SelfPausingUnits', {
        args: [3, 1, reason],
        taskQueue,
        workflowId: `self-paused-${randomBytes(4).toString('hex')}`,
      });
      await env.sleep('3 hours');
      expect(await handle.query(statusQuery)).toMatchObject({ state: 'paused', done: 1, stage: reason });
      expect(pauses).toEqual([reason]);
      // A budget raise resumes only a budget pause; this one waits for whoever read the reason.
      await handle.signal(budgetSignal, 5);
      await env.sleep('1 hour');
      expect(await handle.query(statusQuery)).toMatchObject({ state: 'paused', done: 1 });
      await handle.signal(resumeSignal);
      expect(await handle.result()).toBe(3);
      expect(pauses).toEqual([reason, null]);
    });
  });

  it('pauses once for an unreliable judge when the spec says pause; only marks it otherwise', async () => {
    const unreliable = judgeStanding({ controls: 4, passed: 1, passRate: 0.25 }, 0.9, 'rewards')!;
    const standings = [unreliable, unreliable, null];
    for (const onUnreliable of ['pause', 'mark'] as const) {
      const pauses: (string | null)[] = [];
      const ledger = {
        runSpend: async () => ({ costUsd: 0, calls: 0 }),
        recordRunPause: async ({ reason }: { reason: string | null }) => void pauses.push(reason),
      };
      await withWorker(ledger, async (taskQueue) => {
        const handle = await env.client.workflow.start('JudgeWatchedUnits', {
          args: [standings, onUnreliable],
          taskQueue,
          workflowId: `judge-watched-${onUnreliable}-${randomBytes(4).toString('hex')}`,
        });
        if (onUnreliable === 'pause') {
          await env.sleep('3 hours');
          const reason = `${unreliable.reason}; resume to go on regardless`;
          expect(await handle.query(statusQuery)).toMatchObject({ state: 'paused', done: 1, stage: reason });
          await handle.signal(resumeSignal);
          expect(await handle.result()).toBe(3);
          // Still unreliable after unit 2, but whoever resumed has seen why: no second pause.
          expect(pauses).toEqual([reason, null]);
        } else {
          expect(await handle.result()).toBe(3);
          expect(pauses).toEqual([]);
        }
      });
    }
  });
});
