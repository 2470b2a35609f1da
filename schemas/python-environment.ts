/**
 * The environment variables only mockworld's Python processes read: the trainer worker and policy
 * server (workers/trainer), the evaluation worker (workers/evaluation) and the verl adapter
 * (integrations/verl). They share TEMPORAL_*, DATABASE_URL, MOCKWORLD_HOME, MOCKWORLD_GPU_TASK_QUEUE,
 * MOCKWORLD_METRICS_ADDRESS and MOCKWORLD_WORLD_AUTH with the TypeScript side (environment.ts). docs/configuration.md is
 * generated from this list, and test/unit/python-environment.test.ts fails when a Python source
 * reads a MOCKWORLD_ variable that is in neither list, or this list names one nobody reads.
 */

/** One variable: the process that reads it, its default in words, and what it does. */
export interface PythonVariable {
  readonly name: string;
  readonly readBy: 'trainer' | 'evaluation' | 'verl adapter';
  readonly default: string;
  readonly meaning: string;
}

export const PYTHON_ENVIRONMENT: readonly PythonVariable[] = [
  {
    name: 'MOCKWORLD_CHECKPOINT_DIR',
    readBy: 'trainer',
    default: '`$MOCKWORLD_HOME/checkpoints`',
    meaning: 'Checkpoint root (shared storage on a cluster).',
  },
  {
    name: 'MOCKWORLD_CHECKPOINT_KEEP',
    readBy: 'trainer',
    default: '`2`',
    meaning: 'Newest steps whose weights and optimizer state are kept (step records are always kept).',
  },
  {
    name: 'MOCKWORLD_CHECKPOINT_DISK_WAIT_S',
    readBy: 'trainer',
    default: '`600`',
    meaning:
      'How long a computed step waits for space when its save finds the checkpoint disk full (ENOSPC, quota) ' +
      'before the attempt fails; the step is computed once and its save retried.',
  },
  {
    name: 'MOCKWORLD_TRAINER_DEVICE',
    readBy: 'trainer',
    default: '`cuda` if available, else `cpu`',
    meaning: 'Torch device of this worker (one worker owns one device).',
  },
  {
    name: 'MOCKWORLD_TRAINER_THREADS',
    readBy: 'trainer',
    default: '`1`',
    meaning:
      'CPU threads of trainer math, fixed (OpenMP/MKL dynamic adjustment off): steps are bit-identical ' +
      'whatever the load, and a replay must use the same value.',
  },
  {
    name: 'MOCKWORLD_TRAINER_ACTIVATION_CHECKPOINTING',
    readBy: 'trainer',
    default: '`1` on GPUs, `0` on CPU',
    meaning: "Recompute each decoder layer's activations in the backward.",
  },
  {
    name: 'MOCKWORLD_GROUP_TIMEOUT_S',
    readBy: 'trainer',
    default: '`1800`',
    meaning: 'Longest wait of one collective in a torchrun trainer group.',
  },
  {
    name: 'MOCKWORLD_CONTRACT_DIR',
    readBy: 'trainer',
    default: '`schemas/json/trainer` of the installed checkout',
    meaning: "The trainer contract's JSON Schema files (generated from schemas/).",
  },
  {
    name: 'MOCKWORLD_TENSORBOARD',
    readBy: 'trainer',
    default: '`1`',
    meaning: '`0`: no TensorBoard event files.',
  },
  {
    name: 'MOCKWORLD_TENSORBOARD_DIR',
    readBy: 'trainer',
    default: '`$MOCKWORLD_HOME/tensorboard`',
    meaning: 'One TensorBoard directory per run (`<dir>/<run id>/`).',
  },
  {
    name: 'WANDB_PROJECT',
    readBy: 'trainer',
    default: 'unset',
    meaning:
      'Set: every run also goes to this W&B project (`wandb` reads its own WANDB_* keys; the `tracking` extra).',
  },
  {
    name: 'MLFLOW_TRACKING_URI',
    readBy: 'trainer',
    default: 'unset',
    meaning: 'Set: every run also goes to this MLflow server (the `tracking` extra).',
  },
  {
    name: 'MLFLOW_EXPERIMENT_NAME',
    readBy: 'trainer',
    default: '`mockworld`',
    meaning: 'The MLflow experiment of the runs.',
  },
  {
    name: 'MOCKWORLD_EVAL_TASK_QUEUE',
    readBy: 'evaluation',
    default: '`mockworld-eval`',
    meaning: 'Task queue the evaluation worker serves.',
  },
  {
    name: 'MOCKWORLD_EVAL_CONCURRENCY',
    readBy: 'evaluation',
    default: '`4`',
    meaning: 'Benchmark trials run at once, each its own process.',
  },
  {
    name: 'MOCKWORLD_EVAL_CONTRACT_DIR',
    readBy: 'evaluation',
    default: '`schemas/json/eval` of the installed checkout',
    meaning: "The evaluation contract's JSON Schema files (generated from schemas/).",
  },
  {
    name: 'MOCKWORLD_WORLD_URL',
    readBy: 'verl adapter',
    default: 'required',
    meaning: "The world service verl's agent loop calls (`mockworld world`).",
  },
  {
    name: 'MOCKWORLD_VERL_RUN_ID',
    readBy: 'verl adapter',
    default: '`verl`',
    meaning:
      "Names the verl run in every world request id: one per run, kept when it restarts, so the world never pays a trajectory's calls twice.",
  },
];
