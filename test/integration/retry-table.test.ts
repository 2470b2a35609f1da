import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Context } from '@temporalio/activity';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { ACTIVITY_ERRORS, RunIdTakenError } from '../../activities/errors.js';
import { CorrectnessInputError, MathVerifierError } from '../../activities/correctness/errors.js';
import {
  BenchmarkFileError,
  EvalJudgeFailed,
  EvalTrialConflict,
} from '../../activities/evaluation/errors.js';
import { ParquetLayoutError } from '../../activities/export/errors.js';
import {
  ModelGatewayError,
  ModelRequestRejectedError,
  ModelRetriesExhaustedError,
  StructuredOutputRejectedError,
} from '../../activities/llm/errors.js';
import {
  EpisodeNotGradableError,
  JudgeAuditPlanError,
  UngradableRubricError,
} from '../../activities/reward/errors.js';
import { SandboxRequestError, SandboxUnavailableError } from '../../activities/sandbox/errors.js';
import {
  SearchApiRejectedError,
  SearchApiUnavailableError,
  SearchCorpusError,
} from '../../activities/search/errors.js';
import {
  DatabaseNameError,
  DatabaseUnreachableError,
  RowVanishedError,
} from '../../activities/store/errors.js';
import {
  AnalysisInputError,
  EmbeddingAnswerError,
  ProtocolInputError,
  StudyInputError,
} from '../../activities/study/errors.js';
import {
  DatasetExportError,
  DatasetImportError,
  PersonaFileError,
  SynthesisStageError,
} from '../../activities/synthesis/errors.js';
import { TemplateFileError, TemplateValueError } from '../../activities/templates/errors.js';
import {
  TrainerBatchError,
  TrainingPlanError,
  UnjudgedRolloutsError,
} from '../../activities/training/errors.js';
import {
  ReplicaUnavailableError,
  StalePolicyError,
  WeightSyncInputError,
  WeightSyncRejectedError,
} from '../../activities/training/weight-sync-errors.js';
import {
  EpisodeCheckpointConflictError,
  EpisodeMismatchError,
  TaskNotFoundError,
  TaskNotReadyError,
} from '../../activities/world/errors.js';
import { TRAINER_ERROR_TYPES } from '../../schemas/trainer-contract.js';
import type { ErrorClass } from '../../activities/error-class.js';
import { POLICIES, type PolicyName, type ProbeInput, type RetryProbe } from './retry-table.workflows.js';

/**
 * The retry table: each error an activity can throw, thrown by a real activity on a real worker
 * against the dev server, called through the retry policies the workflows use. A non-retryable
 * error fails at its first attempt; any other is retried up to the policy's maximum attempts and
 * then fails; either way the workflow sees the error's type and message.
 *
 * A new error class goes into its area's list (gathered in activities/errors.ts) and gets a row
 * in TABLE below saying whether a retry is expected; the first test fails until both are done.
 */

/**
 * The table: for each error type, an instance to throw and whether a retry is expected. Every
 * class an activity throws on purpose is here (the first test fails when one is missing), then
 * what the policies do with an error no one classified (a bug), and the Python trainer's failure
 * types (raised there as an ApplicationError of that type; the non-retryable flag the trainer also
 * sets is left off here, so the policy alone must stop the retries).
 */
const TABLE: Record<string, { readonly make: () => Error; readonly retried: boolean }> = {
  [RunIdTakenError.type]: { retried: false, make: () => new RunIdTakenError('run-1', 'Smoke', 'Synthesis') },
  [ModelRetriesExhaustedError.type]: {
    retried: true,
    make: () => new ModelRetriesExhaustedError('http://127.0.0.1:9/v1', 'm', 7, 503, 'service unavailable'),
  },
  [ModelRequestRejectedError.type]: {
    retried: false,
    make: () => new ModelRequestRejectedError('http://127.0.0.1:9/v1', 'm', 400, 'bad'),
  },
  [StructuredOutputRejectedError.type]: {
    retried: false,
    make: () =>
      new StructuredOutputRejectedError('key-1', 'Toolset', 'schema_invalid', 'tools: expected array'),
  },
  [ModelGatewayError.type]: {
    retried: true,
    make: () => new ModelGatewayError('http://127.0.0.1:9', 'unreachable (ECONNREFUSED)'),
  },
  [TaskNotFoundError.type]: { retried: false, make: () => new TaskNotFoundError('task-1') },
  [TaskNotReadyError.type]: {
    retried: false,
    make: () => new TaskNotReadyError('task-1', 'it has no instruction'),
  },
  [EpisodeMismatchError.type]: {
    retried: false,
    make: () => new EpisodeMismatchError('episode-1', 'sample_index: stored 1, given 2'),
  },
  [EpisodeCheckpointConflictError.type]: {
    retried: true,
    make: () => new EpisodeCheckpointConflictError('episode-1', 3),
  },
  [UngradableRubricError.type]: {
    retried: false,
    make: () => new UngradableRubricError('its rubric has no sub-goal', 'task-1'),
  },
  [EpisodeNotGradableError.type]: {
    retried: false,
    make: () => new EpisodeNotGradableError('episode-1', 'it has not ended'),
  },
  [JudgeAuditPlanError.type]: {
    retried: false,
    make: () => new JudgeAuditPlanError('grpo-1', 'checkpoints', 'no held-out evaluation episodes at step 3'),
  },
  [SynthesisStageError.type]: {
    retried: false,
    make: () => new SynthesisStageError('task-1', 'it does not exist'),
  },
  [PersonaFileError.type]: {
    retried: false,
    make: () => new PersonaFileError('/data/personas.jsonl', 'ENOENT'),
  },
  [DatasetExportError.type]: {
    retried: false,
    make: () => new DatasetExportError('run-1', 'it is a Smoke run'),
  },
  [DatasetImportError.type]: { retried: false, make: () => new DatasetImportError('line 3: not JSON') },
  [TrainingPlanError.type]: {
    retried: false,
    make: () => new TrainingPlanError('synthesis-1', 'only 2 kept tasks'),
  },
  [TrainerBatchError.type]: {
    retried: false,
    make: () => new TrainerBatchError('run-1', 1, ['episode-1: has not ended']),
  },
  [UnjudgedRolloutsError.type]: {
    retried: false,
    make: () => new UnjudgedRolloutsError('run-1', 0, 3, 8, 0.05),
  },
  [StalePolicyError.type]: {
    retried: true,
    make: () => new StalePolicyError('http://vllm-0:8000', 'run-1@step-2', 'run-1@step-1'),
  },
  [ReplicaUnavailableError.type]: {
    retried: true,
    make: () => new ReplicaUnavailableError('http://vllm-0:8000', '/v1/load_lora_adapter', 'ECONNREFUSED'),
  },
  [WeightSyncRejectedError.type]: {
    retried: false,
    make: () =>
      new WeightSyncRejectedError('http://vllm-0:8000', '/v1/load_lora_adapter', 404, 'not enabled'),
  },
  [WeightSyncInputError.type]: {
    retried: false,
    make: () => new WeightSyncInputError(2, 'has no LoRA adapter to load'),
  },
  [StudyInputError.type]: {
    retried: false,
    make: () => new StudyInputError('study-1', 'it has no question q-1'),
  },
  [EmbeddingAnswerError.type]: {
    retried: true,
    make: () => new EmbeddingAnswerError('http://127.0.0.1:9/v1', 4, 3),
  },
  [ProtocolInputError.type]: {
    retried: false,
    make: () => new ProtocolInputError('selectDiverseResponses', 'no embeddings'),
  },
  [AnalysisInputError.type]: {
    retried: false,
    make: () => new AnalysisInputError('fitScalingLaw', 'needs 3 distinct r, got 2'),
  },
  [TemplateFileError.type]: {
    retried: false,
    make: () => new TemplateFileError('toolset', '/data/toolset.md', 'ENOENT'),
  },
  [TemplateValueError.type]: { retried: false, make: () => new TemplateValueError('v1/toolset', 'persona') },
  [DatabaseUnreachableError.type]: {
    retried: true,
    make: () =>
      new DatabaseUnreachableError('postgres://u:secret@127.0.0.1:5432/x', new Error('ECONNREFUSED')),
  },
  [DatabaseNameError.type]: { retried: false, make: () => new DatabaseNameError('bad name') },
  [RowVanishedError.type]: { retried: true, make: () => new RowVanishedError('llm_calls', 'key-1') },
  [SandboxUnavailableError.type]: {
    retried: false,
    make: () => new SandboxUnavailableError('bubblewrap cannot create a user namespace'),
  },
  [SandboxRequestError.type]: { retried: false, make: () => new SandboxRequestError('code over 64 KiB') },
  [SearchCorpusError.type]: {
    retried: false,
    make: () => new SearchCorpusError('facts', 'corpus.jsonl was not indexed: line 3: not JSON'),
  },
  [SearchApiRejectedError.type]: {
    retried: false,
    make: () => new SearchApiRejectedError('http://127.0.0.1:9/search', 'it refused the key (HTTP 401)'),
  },
  [SearchApiUnavailableError.type]: {
    retried: true,
    make: () => new SearchApiUnavailableError('http://127.0.0.1:9/search', 'HTTP 503'),
  },
  [CorrectnessInputError.type]: {
    retried: false,
    make: () => new CorrectnessInputError('a search problem needs a judge'),
  },
  [MathVerifierError.type]: {
    retried: true,
    make: () => new MathVerifierError('it printed a line that is not a verdict'),
  },
  [ParquetLayoutError.type]: { retried: false, make: () => new ParquetLayoutError('rubric', 'INT96') },
  [BenchmarkFileError.type]: {
    retried: false,
    make: () => new BenchmarkFileError('benchmark file /data/math.jsonl', '1 bad line(s): line 2: not JSON'),
  },
  [EvalTrialConflict.type]: {
    retried: false,
    make: () => new EvalTrialConflict('eval-1/math/math-sample/gauss/0', 'a'.repeat(64), 'b'.repeat(64)),
  },
  [EvalJudgeFailed.type]: {
    retried: false,
    make: () => new EvalJudgeFailed('eval-1/synthetic/held-out/task-1/t0', 'judge answer not JSON'),
  },
  RangeError: { retried: true, make: () => new RangeError('Maximum call stack size exceeded') },
  RuntimeError: {
    retried: true,
    make: () => ApplicationFailure.create({ type: 'RuntimeError', message: 'CUDA out of memory' }),
  },
  ...Object.fromEntries(
    TRAINER_ERROR_TYPES.map((type) => [
      type,
      {
        retried: false,
        make: () => ApplicationFailure.create({ type, message: `${type}: step 2 asked for before step 1` }),
      },
    ]),
  ),
};

/** What became of one row's workflow. */
interface Outcome {
  readonly failure: string;
  readonly type: string | null | undefined;
  readonly message: string | undefined;
  readonly attemptsRun: readonly number[];
  readonly lastAttemptInHistory: number | null | undefined;
}

interface Row {
  readonly id: string;
  readonly policy: PolicyName;
  readonly type: string;
}

/**
 * Every activity error, and an unclassified one, under the CPU policies (the benchmark activities'
 * too: they run the world, model and sandbox code of every area); the trainer's types under the
 * trainer's.
 */
const ROWS: Row[] = [
  ...(['long', 'short', 'evalTrial', 'evalShort'] as const).flatMap((policy) =>
    [...ACTIVITY_ERRORS.map((c) => c.type), 'RangeError'].map((type) => ({ policy, type })),
  ),
  ...[...TRAINER_ERROR_TYPES, 'RuntimeError'].map((type) => ({ policy: 'trainer' as const, type })),
].map((row) => ({ ...row, id: `${row.policy}:${row.type}` }));

/** Exported classes extending Error, anywhere under activities/. */
function errorClassesInActivities(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith('.ts')) {
        const text = readFileSync(full, 'utf8');
        for (const m of text.matchAll(/export class (\w+) extends Error\b/g)) found.push(m[1]!);
      }
    }
  };
  walk(path.join(REPO_ROOT, 'activities'));
  return found.sort();
}

/** What the probe activity saw of each workflow: the attempts it ran and when. */
const seen = new Map<string, { attempt: number; at: number }[]>();

const activities = {
  async probe({ row, failures }: ProbeInput): Promise<number> {
    const { attempt, workflowExecution } = Context.current().info;
    const workflowId = workflowExecution!.workflowId;
    const calls = seen.get(workflowId) ?? [];
    calls.push({ attempt, at: Date.now() });
    seen.set(workflowId, calls);
    if (failures < 0 || attempt <= failures) throw TABLE[row.split(':')[1]!]!.make();
    return attempt;
  },
};

describe('the retry table', () => {
  let nativeConnection: NativeConnection;
  let connection: Connection;
  let client: Client;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = `retry-table-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    try {
      // Hundreds of failed attempts would each log a warning.
      Runtime.install({ logger: new DefaultLogger('ERROR') });
    } catch {
      /* installed by an earlier file in this process */
    }
    nativeConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
    worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      workflowsPath: fileURLToPath(new URL('./retry-table.workflows.ts', import.meta.url)),
      activities,
    });
    running = worker.run();
    connection = await Connection.connect({ address: inject('temporalAddress') });
    client = new Client({ connection });
  });
  afterAll(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await nativeConnection?.close();
    await connection?.close();
  });

  it('has a row for every error class under activities/, which declares its type as its name', () => {
    const classes: readonly ErrorClass[] = ACTIVITY_ERRORS;
    expect(errorClassesInActivities()).toEqual(classes.map((c) => c.type).sort());
    for (const c of classes) {
      const sample = TABLE[c.type]!.make();
      expect(sample, c.type).toBeInstanceOf(c);
      expect(sample.name, c.type).toBe(c.type);
      expect(c.retryable, c.type).toBe(TABLE[c.type]!.retried);
    }
  });

  it('fails each error at once or after the maximum attempts, as the table says, with its type and message', async () => {
    const outcomes = await Promise.all(
      ROWS.map(async (row) => {
        const workflowId = `retry-${row.id}-${randomBytes(3).toString('hex')}`;
        const handle = await client.workflow.start<typeof RetryProbe>('RetryProbe', {
          taskQueue,
          workflowId,
          args: [{ row: row.id, failures: -1, policy: row.policy, interval: 10 }],
        });
        const error = await handle.result().then(
          () => undefined,
          (e: unknown) => e,
        );
        const history = await handle.fetchHistory();
        const started = history.events!.filter((e) => e.activityTaskStartedEventAttributes);
        return { row, workflowId, error, started };
      }),
    );
    // One line per row, compared as a whole: a failure shows every row that differs.
    const actual: Record<string, Outcome> = {};
    const expected: Record<string, Outcome> = {};
    for (const { row, workflowId, error, started } of outcomes) {
      const { make, retried } = TABLE[row.type]!;
      const attempts = retried ? POLICIES[row.policy].retry!.maximumAttempts! : 1;
      expected[row.id] = {
        failure: `ActivityFailure ${retried ? RetryState.MAXIMUM_ATTEMPTS_REACHED : RetryState.NON_RETRYABLE_FAILURE}`,
        type: row.type,
        message: make().message,
        attemptsRun: Array.from({ length: attempts }, (_, i) => i + 1),
        lastAttemptInHistory: attempts,
      };
      const activity = error instanceof WorkflowFailedError ? error.cause : undefined;
      const cause = activity instanceof ActivityFailure ? activity.cause : undefined;
      actual[row.id] = {
        failure:
          activity instanceof ActivityFailure ? `ActivityFailure ${activity.retryState}` : String(error),
        type: cause instanceof ApplicationFailure ? cause.type : undefined,
        message: cause?.message,
        attemptsRun: (seen.get(workflowId) ?? []).map((c) => c.attempt),
        // The server's record: one started event, of the last attempt.
        lastAttemptInHistory:
          started.length === 1 ? started[0]!.activityTaskStartedEventAttributes!.attempt : undefined,
      };
    }
    expect(actual).toEqual(expected);
  });

  it.each(['long', 'short', 'trainer', 'evalTrial', 'evalShort'] as const)(
    'the %s policy, waits unchanged, retries after 1 s then 2 s and the third attempt succeeds',
    async (policy) => {
      const type = policy === 'trainer' ? 'RuntimeError' : DatabaseUnreachableError.type;
      const workflowId = `retry-waits-${policy}-${randomBytes(3).toString('hex')}`;
      const attempt = await client.workflow.execute<typeof RetryProbe>('RetryProbe', {
        taskQueue,
        workflowId,
        args: [{ row: `${policy}:${type}`, failures: 2, policy }],
      });
      expect(attempt).toBe(3);
      const calls = seen.get(workflowId)!;
      expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
      // initialInterval 1 s, backoff coefficient 2 (the server may add a little, never less).
      expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(950);
      expect(calls[2]!.at - calls[1]!.at).toBeGreaterThanOrEqual(1_950);
    },
  );
});
