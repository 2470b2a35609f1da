import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createChaos, DEFAULT_OPTIONS, type ChaosFaultKind } from '../../testkit/chaos/harness.js';
import { markdown, replayFindings, totals } from '../../testkit/chaos/report.js';
import { query } from '../../testkit/database.js';

/**
 * The chaos harness's fault kinds (i) and (j) at CI size, on the stack of chaos.test.ts (own
 * Temporal dev server, own PostgreSQL instance, model servers failing 20% of requests) with the
 * workload they need: Evaluation runs (BFCL and tau2 trials through the benchmarks' official code
 * on the Python evaluation worker, against a ground-truth replay) beside the synthesis and GRPO
 * runs, and the trainer as a torchrun group of 2 CPU ranks. (i) SIGKILLs the evaluation worker
 * and its trial processes while a trial runs, and a new worker is started; (j) SIGKILLs rank 1 of
 * the group, inside a trainer step when one runs within a minute, and torchrun must restart the
 * group by itself. Every trial must be stored exactly once at full reward, none run again after
 * its row was stored; every optimizer step applied once (a fresh replay in a group of 2 ranks
 * bit-identical); every fault recovered, every retry explained by a fault, no group restart
 * without a rank kill. bench/chaos.ts runs the same at 10 faults each.
 */
const KINDS: readonly ChaosFaultKind[] = ['evaluation-worker-kill', 'trainer-rank-kill'];

const MACHINE_POSTGRES =
  process.env.MOCKWORLD_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function postmasterStart(): Promise<string> {
  const [row] = await query<{ started: Date }>(
    MACHINE_POSTGRES,
    'SELECT pg_postmaster_start_time() AS started',
  );
  return row!.started.toISOString();
}

describe('chaos: the evaluation worker and a trainer rank SIGKILLed under Evaluation, synthesis and GRPO runs', () => {
  const chaos = createChaos({
    ...DEFAULT_OPTIONS,
    kinds: KINDS,
    faultsPerKind: 1,
    seed: 11,
    meanGapMs: 12_000,
    warmupMs: 5_000,
    rankInStepKills: 1,
    workload: {
      synthesisTasks: 4,
      demonstrations: 2,
      synthesisConcurrency: 4,
      grpoIterations: 2,
      grpoTasks: 2,
      grpoRollouts: 3,
      evaluationBfclTasks: 3,
      evaluationTau2Tasks: 1,
      evaluationLatencyMs: 300,
    },
    keepRunsGoing: true,
    maxRounds: 3,
    drainTimeoutMs: 240_000,
    recoveryTimeoutMs: 200_000,
    temporalCli: inject('temporalCli'),
    log: (line) => console.log(`[chaos (i)(j)] ${line}`),
  });
  let machinePostgresStartedAt: string;
  beforeAll(async () => {
    machinePostgresStartedAt = await postmasterStart();
  });
  afterAll(() => chaos.cleanup(), 120_000);

  it(
    'stores every trial once, applies every step once, and recovers from both kills',
    { timeout: 600_000 },
    async () => {
      const result = await chaos.run();
      console.log(markdown(result));
      if (process.env.CHAOS_TEST_RESULT)
        await writeFile(process.env.CHAOS_TEST_RESULT, JSON.stringify(result, null, 2));
      const t = totals(result);

      expect(await postmasterStart()).toBe(machinePostgresStartedAt);
      expect(result.skipped).toEqual([]);
      expect(t.faultsByKind['evaluation-worker-kill']).toBe(1);
      expect(t.faultsByKind['trainer-rank-kill']).toBe(1);
      expect(result.faults.filter((f) => f.runsInProgress === 0)).toEqual([]);
      expect(result.trainer.ranks).toBe(2);

      // Every run completed: Evaluation runs among them, their trials stored once each at full reward.
      expect(result.runs.filter((r) => r.status !== 'COMPLETED')).toEqual([]);
      expect(result.runs.some((r) => r.kind === 'Evaluation')).toBe(true);
      expect(t.evaluationTrials).toBeGreaterThan(0);
      expect(result.audits.flatMap((a) => [...a.lost, ...a.duplicated, ...a.failedRecorded])).toEqual([]);
      expect(result.audits.flatMap((a) => a.notes)).toEqual([]);

      // Every optimizer step once: no step applied twice or skipped, the replay in a group bit-identical.
      expect(t.stepsAppliedTwice).toBe(0);
      expect(t.stepsSkipped).toBe(0);
      expect(replayFindings(result.audits)).toEqual([]);
      expect(t.replaysIdentical).toBe(t.grpoRuns);
      expect(result.modelCalls.byRole.filter((r) => r.paidTwice !== 0)).toEqual([]);

      // The evaluation worker was killed with a trial running on it; the trial started again.
      const evalKill = result.faults.find((f) => f.kind === 'evaluation-worker-kill')!;
      expect(evalKill.interrupted).toBeGreaterThan(0);
      // torchrun restarted the group by itself (no supervisor restart: no unplanned exit), once.
      const rankKill = result.faults.find((f) => f.kind === 'trainer-rank-kill')!;
      expect(rankKill.notes.filter((n) => /did not|exited/.test(n))).toEqual([]);
      expect(result.trainer.groupRestarts).toBe(1);
      expect(result.trainer.groupRestartsUnexplained).toEqual([]);
      // A step the kill cut ran again on the restarted group and finished.
      if (/inside a trainer step/.test(rankKill.detail))
        expect(rankKill.notes.some((n) => /trainer\.grpoStep .* finished after running again/.test(n))).toBe(
          true,
        );
      expect(result.unplannedExits).toEqual([]);

      // Both faults healed, and every activity retry is one of theirs.
      expect(result.faults.filter((f) => f.recoveryMs === undefined)).toEqual([]);
      expect(result.activityRetries.filter((r) => !r.explainedBy)).toEqual([]);
    },
  );
});
