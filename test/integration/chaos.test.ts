import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createChaos,
  DEFAULT_OPTIONS,
  FAULT_KINDS,
  type ChaosFaultKind,
} from '../../testkit/chaos/harness.js';
import { markdown, replayFindings, totals } from '../../testkit/chaos/report.js';
import { query } from '../../testkit/database.js';

/**
 * The chaos harness (testkit/chaos; bench/chaos.ts runs it at full size) at CI size: a synthesis
 * run and a GRPO run on a private stack (own Temporal dev server, own PostgreSQL instance, two CPU
 * worker processes calling the models through the model gateway, the Python trainer worker and
 * policy server, model servers failing 20% of requests) while CPU workers, the trainer and the
 * gateway are SIGKILLed, the Temporal server is crashed and restarted on its db file, the
 * harness's own PostgreSQL is restarted, a model server answers in 5–20 s for half a minute, and
 * the checkpoint directory's own disk is full for a while, once each (bench/chaos.ts: ten each).
 * Nothing may be lost, duplicated, applied twice or paid twice, every tool call must get its
 * mapping's one answer, and the slow server must cost no give-up and no retry.
 *
 * Nothing of the machine's is restarted: the machine's PostgreSQL postmaster must have the same
 * start time after the run as before it.
 */
const FAULTS_PER_KIND = 1;
/**
 * The kinds (a)–(h). The evaluation worker kill (i) and the trainer rank kill (j) have a test of
 * their own (chaos-evaluation-ranks.test.ts): with them the workload gains Evaluation runs and the
 * trainer becomes a torchrun group, which would change what (b) and (h) meet here, and each of
 * their recoveries waits out a minute's heartbeat timeout.
 */
const KINDS: readonly ChaosFaultKind[] = FAULT_KINDS.filter(
  (k) => k !== 'evaluation-worker-kill' && k !== 'trainer-rank-kill',
);

/** The machine's PostgreSQL (the one every other test uses), which this test must leave alone. */
const MACHINE_POSTGRES =
  process.env.MOCKWORLD_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function postmasterStart(): Promise<string> {
  const [row] = await query<{ started: Date }>(
    MACHINE_POSTGRES,
    'SELECT pg_postmaster_start_time() AS started',
  );
  return row!.started.toISOString();
}

describe('chaos: kills, restarts, a slow model and a full disk while a synthesis run and a GRPO run go on', () => {
  const chaos = createChaos({
    ...DEFAULT_OPTIONS,
    faultsPerKind: FAULTS_PER_KIND,
    kinds: KINDS,
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
      evaluationBfclTasks: 3,
      evaluationTau2Tasks: 1,
      evaluationLatencyMs: 300,
    },
    slowModel: { windowMs: [20_000, 30_000], latencyMs: [5_000, 20_000] },
    checkpointDisk: { sizeMb: 64, holdMs: [8_000, 15_000], freshStepWaitMs: 60_000 },
    keepRunsGoing: true,
    maxRounds: 3,
    drainTimeoutMs: 180_000,
    recoveryTimeoutMs: 150_000,
    temporalCli: inject('temporalCli'),
    log: (line) => console.log(`[chaos] ${line}`),
  });
  let machinePostgresStartedAt: string;
  beforeAll(async () => {
    machinePostgresStartedAt = await postmasterStart();
  });
  afterAll(() => chaos.cleanup(), 120_000);

  it(
    'loses, duplicates, re-applies and re-pays nothing, and recovers from every fault',
    { timeout: 720_000 },
    async () => {
      const result = await chaos.run();
      console.log(markdown(result));
      // CHAOS_TEST_RESULT=<file>: the whole result (faults, repeats, findings) as JSON, to dig into a failure.
      if (process.env.CHAOS_TEST_RESULT)
        await writeFile(process.env.CHAOS_TEST_RESULT, JSON.stringify(result, null, 2));
      const t = totals(result);

      // The machine's PostgreSQL was not restarted: the harness restarts only its own instance.
      expect(await postmasterStart()).toBe(machinePostgresStartedAt);

      // Every fault was injected, while the runs were going on, and the model server really failed
      // requests. Only a full disk may be skipped, and only where no filesystem can be mounted.
      expect(
        result.skipped.filter((x) => !(x.kind === 'checkpoint-disk-full' && /cannot mount/.test(x.reason))),
      ).toEqual([]);
      const skippedKinds = new Set(result.skipped.map((x) => x.kind));
      expect(t.faultsByKind).toEqual(
        Object.fromEntries(
          FAULT_KINDS.map((k) => [k, !KINDS.includes(k) || skippedKinds.has(k) ? 0 : FAULTS_PER_KIND]),
        ),
      );
      expect(result.faults.filter((f) => f.runsInProgress === 0)).toEqual([]);
      const modelFaults = Object.values(result.modelServers).flatMap((s) => Object.values(s.faults));
      expect(modelFaults.reduce((n, x) => n + (x ?? 0), 0)).toBeGreaterThan(0);

      expect(t.runsCompleted).toBe(t.runs);
      expect(result.audits.flatMap((a) => [...a.lost, ...a.duplicated, ...a.failedRecorded])).toEqual([]);
      expect(t.stepsAppliedTwice).toBe(0);
      expect(t.stepsSkipped).toBe(0);
      // A fresh replay of every GRPO run is bit-identical; if not, which part differs first (the
      // replay errored, a step's metrics, a step's weights) and the values.
      expect(replayFindings(result.audits)).toEqual([]);
      expect(t.replaysIdentical).toBe(t.grpoRuns);
      // Every answer delivered is one ledger row: the gateway records what a killed worker paid for.
      // The one exception is the gateway's own death between an answer reaching it and its row
      // being written (at-least-once leaves that window open; no process can close it): such an
      // answer is paid again, and must be attributed to that kill by the gateway's TCP ports.
      expect(result.modelCalls.byRole.filter((r) => r.paidTwice - r.onTheWireAtGatewayKill !== 0)).toEqual(
        [],
      );
      expect(result.mappings.inconsistencies).toEqual([]);
      expect(result.mappings.checkedCalls).toBeGreaterThan(0);
      // The slow server: every request in its windows was waited for, and no activity retried.
      expect(t.slowModelGiveUps).toBe(0);
      expect(result.activityRetries.filter((r) => r.inSlowWindow && !r.explainedBy)).toEqual([]);
      // Every fault healed and the work it cut off resumed.
      expect(result.faults.filter((f) => f.recoveryMs === undefined)).toEqual([]);
    },
  );
});
