import { writeFile } from 'node:fs/promises';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createChaos, DEFAULT_OPTIONS, FAULT_KINDS } from '../../testkit/chaos/harness.js';
import { markdown, totals } from '../../testkit/chaos/report.js';

/**
 * The chaos harness (testkit/chaos; bench/chaos.ts runs it at full size) at CI size: a synthesis
 * run and a GRPO run on a private stack (own Temporal dev server, own database, two CPU worker
 * processes, the Python trainer worker and policy server, model servers failing 20% of requests)
 * while CPU workers and the trainer are SIGKILLed, the Temporal server is crashed and restarted on
 * its db file, and PostgreSQL is restarted, twice each. Nothing may be lost, duplicated, applied
 * twice or paid twice (the CPU workers call the models through the model gateway), and every tool
 * call must get its mapping's one answer.
 *
 * PostgreSQL is the machine's own: the harness waits (up to a minute) until no other test run is
 * on the machine before it starts, and fails saying who is there if one stays.
 */
const FAULTS_PER_KIND = 2;

describe('chaos: kills and restarts of every part while a synthesis run and a GRPO run go on', () => {
  const chaos = createChaos({
    ...DEFAULT_OPTIONS,
    faultsPerKind: FAULTS_PER_KIND,
    seed: 11,
    meanGapMs: 12_000,
    warmupMs: 5_000,
    // A kill inside a trainer step waits out the step's 1-minute heartbeat timeout;
    // test/integration/grpo-faults.test.ts covers that case, this one stays short.
    trainerInStepKills: 0,
    trainerKillsAvoidSteps: true,
    workload: {
      synthesisTasks: 8,
      demonstrations: 2,
      synthesisConcurrency: 4,
      grpoIterations: 2,
      grpoTasks: 2,
      grpoRollouts: 3,
    },
    keepRunsGoing: true,
    maxRounds: 3,
    drainTimeoutMs: 150_000,
    recoveryTimeoutMs: 150_000,
    quietWaitMs: 60_000,
    temporalCli: inject('temporalCli'),
    log: (line) => console.log(`[chaos] ${line}`),
  });
  afterAll(() => chaos.cleanup(), 120_000);

  it(
    'loses, duplicates, re-applies and re-pays nothing, and recovers from every fault',
    { timeout: 480_000 },
    async () => {
      const result = await chaos.run();
      console.log(markdown(result));
      // CHAOS_TEST_RESULT=<file>: the whole result (faults, repeats, findings) as JSON, to dig into a failure.
      if (process.env.CHAOS_TEST_RESULT)
        await writeFile(process.env.CHAOS_TEST_RESULT, JSON.stringify(result, null, 2));
      const t = totals(result);

      // Every fault was injected, while the runs were going on, and the model server really failed requests.
      expect(t.faultsByKind).toEqual(Object.fromEntries(FAULT_KINDS.map((k) => [k, FAULTS_PER_KIND])));
      expect(result.faults.every((f) => f.runsInProgress > 0)).toBe(true);
      const modelFaults = Object.values(result.modelServers).flatMap((s) => Object.values(s.faults));
      expect(modelFaults.reduce((n, x) => n + (x ?? 0), 0)).toBeGreaterThan(0);

      expect(t.runsCompleted).toBe(t.runs);
      expect(result.audits.flatMap((a) => [...a.lost, ...a.duplicated, ...a.failedRecorded])).toEqual([]);
      expect(t.stepsAppliedTwice).toBe(0);
      expect(t.stepsSkipped).toBe(0);
      expect(t.replaysIdentical).toBe(t.grpoRuns);
      // Every answer delivered is one ledger row: the gateway records what a killed worker paid for.
      expect(result.modelCalls.byRole.filter((r) => r.paidTwice !== 0)).toEqual([]);
      expect(result.mappings.inconsistencies).toEqual([]);
      expect(result.mappings.checkedCalls).toBeGreaterThan(0);
      // Every fault healed and the work it cut off resumed.
      expect(result.faults.filter((f) => f.recoveryMs === undefined)).toEqual([]);
    },
  );
});
