import { proxyActivities } from '@temporalio/workflow';

/** A step's training data, by reference: rows of `trainer_batches` for (run, step). */
interface PostgresBatchRef {
  readonly kind: 'postgres';
  readonly run_id: string;
  readonly step: number;
}

/** The Python trainer's step contract (workers/trainer/README.md). */
export interface TrainerStepInput {
  readonly run_id: string;
  readonly step: number;
  readonly batch_ref: PostgresBatchRef;
  readonly model: Record<string, unknown>;
  readonly config: Record<string, number>;
}

export interface TrainerStepResult {
  readonly step: number;
  readonly metrics: Record<string, number | null>;
  readonly model_path: string;
  readonly replayed: boolean;
}

/** Activities of the GPU trainer worker, called by name on its task queue. */
export interface TrainerActivities {
  'trainer.grpoStep'(input: TrainerStepInput): Promise<TrainerStepResult>;
  'trainer.sftStep'(input: TrainerStepInput): Promise<TrainerStepResult>;
  'trainer.saveCheckpoint'(input: {
    run_id: string;
    step?: number;
  }): Promise<{ step: number; model_path: string }>;
  /** Fixes a run's model before its first step, so its step 0 is served as that model. */
  'trainer.registerRun'(input: { run_id: string; model: Record<string, unknown> }): Promise<{ step: number }>;
}

/**
 * The trainer's activities on `taskQueue`. Steps are long and heartbeat; errors a retry cannot
 * fix are non-retryable, anything else (a killed worker, CUDA out of memory) is retried, and the
 * trainer's exactly-once bookkeeping makes a retried step that was already applied a no-op.
 */
export function trainerActivities(taskQueue: string) {
  return proxyActivities<TrainerActivities>({
    taskQueue,
    startToCloseTimeout: '4 hours',
    heartbeatTimeout: '1 minute',
    retry: {
      maximumInterval: '1 minute',
      nonRetryableErrorTypes: [
        'TrainerBadRequest',
        'TrainerStepOutOfOrder',
        'TrainerStepMismatch',
        'TrainerCheckpointMissing',
      ],
    },
  });
}
